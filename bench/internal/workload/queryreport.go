package workload

import (
	"fmt"
	"strings"
)

// Markdown implements Result: the queries' latencies side by side (the
// peer first, then ebb, then ebb's median over the peer's), then the fill
// and the storm, then how each store was asked.
func (r *QueryResult) Markdown() string {
	if len(r.Stores) == 0 {
		return "No store of the run has secondary indexes to query (ebb and BuntDB have).\n"
	}
	var order []QueryRun
	var ebb, peer *QueryRun
	for i := range r.Stores {
		if r.Stores[i].Store != "ebb" {
			order = append(order, r.Stores[i])
			if peer == nil {
				peer = &r.Stores[i]
			}
		}
	}
	for i := range r.Stores {
		if r.Stores[i].Store == "ebb" {
			order = append(order, r.Stores[i])
			ebb = &r.Stores[i]
		}
	}
	names := make([]string, len(order))
	for i, s := range order {
		names[i] = s.Store
	}
	both := strings.Join(names, " / ")
	var b strings.Builder
	fmt.Fprintf(&b, "%d documents of %d bytes, half expired; latency of the query and the decoding of every document it returns:\n\n",
		r.Config.N, r.Config.DocSize)
	t := table{head: []string{"query", "rows (mean; the count)"}}
	for _, s := range order {
		t.head = append(t.head, s.Store+" p50 ms", s.Store+" p99 ms")
	}
	if ebb != nil && peer != nil {
		t.head = append(t.head, "ebb / "+peer.Store+" p50")
	}
	t.head = append(t.head, "runs ("+both+")", "expired returned ("+both+")", "wrong ("+both+")")
	for k, q := range order[0].Queries {
		row := []string{q.Title, num(q.MeanExpected)}
		var runs, expired, wrong []string
		for _, s := range order {
			if k >= len(s.Queries) {
				row = append(row, "–", "–")
				continue
			}
			sq := s.Queries[k]
			row = append(row, ms(sq.Latency.P50), ms(sq.Latency.P99))
			runs = append(runs, fmt.Sprint(sq.Runs))
			expired = append(expired, fmt.Sprint(sq.ExpiredReturned))
			wrong = append(wrong, fmt.Sprint(sq.Wrong))
		}
		if ebb != nil && peer != nil && k < len(ebb.Queries) && k < len(peer.Queries) {
			row = append(row, ratio(ebb.Queries[k].Latency.P50, peer.Queries[k].Latency.P50))
		}
		row = append(row, strings.Join(runs, " / "), strings.Join(expired, " / "), strings.Join(wrong, " / "))
		t.row(row...)
	}
	b.WriteString(t.String())

	fmt.Fprintf(&b, "\nFill (batches of %d, fsync per commit) and the storm (%d documents expiring in the same second while the queries run from its writing until %v after):\n\n",
		r.Config.Batch, r.Config.StormN, r.Config.StormAfter)
	t = table{head: []string{"store", "fill docs/s", "× ebb", "expired during fill", "storm queries", "rows checked",
		"expired returned", "wrong", "equality p99 ms before → after", "10% p99 ms before → after"}}
	for _, s := range order {
		ref := 0.0
		if ebb != nil {
			ref = ebb.FillDocsPerSec
		}
		st := s.Storm
		eq, tenth := st.kind("equality"), st.kind("tenth")
		t.row(s.Store, num(s.FillDocsPerSec), ratio(s.FillDocsPerSec, ref), fmt.Sprint(s.ExpiredDuringFill),
			fmt.Sprint(st.Queries), fmt.Sprint(st.RowsChecked), fmt.Sprint(st.ExpiredReturned), fmt.Sprint(st.Wrong),
			ms(eq.Before.P99)+" → "+ms(eq.After.P99), ms(tenth.Before.P99)+" → "+ms(tenth.After.P99))
	}
	b.WriteString(t.String())

	b.WriteString("\nHow each store is asked:\n\n")
	t = table{head: append([]string{"query"}, names...)}
	for _, q := range order[0].Queries {
		row := []string{q.Title}
		for _, s := range order {
			row = append(row, "`"+s.Texts[q.Query]+"`")
		}
		t.row(row...)
	}
	b.WriteString(t.String())
	return b.String()
}
