package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ebbdb/ebb/engine/tool"
)

// Human formatting shared by the verbs: sizes, times, durations, tables.

// fmtBytes formats n bytes with a binary unit: "512 B", "1.5 KiB".
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), -1
	for (f >= unit || f <= -unit) && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}

// fmtTTL formats a DefaultTTL: "off", "-1" (on, no default), "5s".
func fmtTTL(d *int32) string {
	switch {
	case d == nil:
		return "off"
	case *d == -1:
		return "-1"
	}
	return fmt.Sprintf("%ds", *d)
}

// fmtItemTTL formats an item's own ttl: "-" when absent.
func fmtItemTTL(t int32) string {
	if t == 0 {
		return "-"
	}
	return strconv.Itoa(int(t))
}

const timeLayout = "2006-01-02 15:04:05Z"

// fmtTime formats unix seconds in UTC.
func fmtTime(t int64) string { return time.Unix(t, 0).UTC().Format(timeLayout) }

// fmtRange formats a time range; the end leaves out the date it shares
// with the start.
func fmtRange(r *tool.TimeRange) string {
	if r == nil {
		return "-"
	}
	lo, hi := time.Unix(r.Min, 0).UTC(), time.Unix(r.Max, 0).UTC()
	if r.Min == r.Max {
		return lo.Format(timeLayout)
	}
	if lo.YearDay() == hi.YearDay() && lo.Year() == hi.Year() {
		return lo.Format(timeLayout) + ".." + hi.Format("15:04:05Z")
	}
	return lo.Format(timeLayout) + ".." + hi.Format(timeLayout)
}

// fmtRel formats t relative to now: "in 5s", "3m ago", "now".
func fmtRel(t, now int64) string {
	d := time.Duration(t-now) * time.Second
	switch {
	case d == 0:
		return "now"
	case d > 0:
		return "in " + shortDuration(d)
	}
	return shortDuration(-d) + " ago"
}

func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String() // "10s", "1m0s", "1h0m0s", "1h2m3s"
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// fmtShare formats a fraction as a percentage.
func fmtShare(f float64) string {
	if f > 0 && f < 0.01 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// fmtSeq formats a seq range.
func fmtSeq(r *tool.SeqRange) string {
	switch {
	case r == nil:
		return "-"
	case r.First == r.Last:
		return strconv.FormatUint(r.First, 10)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// fmtFiles formats a list of segment file numbers: "1,4", or "-".
func fmtFiles(nums []uint32) string {
	if len(nums) == 0 {
		return "-"
	}
	parts := make([]string, len(nums))
	for i, n := range nums {
		parts[i] = strconv.FormatUint(uint64(n), 10)
	}
	return strings.Join(parts, ",")
}

// newTable returns a tabwriter for aligned columns separated by two spaces.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeOutput writes rep to w as indented JSON, or with print as tables.
func writeOutput[R any](w io.Writer, asJSON bool, rep R, print func(io.Writer, R) error) error {
	if asJSON {
		return writeJSON(w, rep)
	}
	return print(w, rep)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// parseTime parses an instant given on the command line: unix seconds or
// RFC 3339.
func parseTime(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither unix seconds nor an RFC 3339 time such as 2024-05-01T12:00:00Z", s)
	}
	return t, nil
}
