package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestExplainData runs the cases of testdata/explain: containers set up
// with an indexing policy and items, and the plans Container.Explain gives
// their queries. -rewrite regenerates the answers. The commands, all on one
// database (opened at the first command, the clock at t0):
//
//	container id=<id> [indexing=consistent|lazy|none] [default-ttl=<n>]
//	          [included=(<path>, ...)] [excluded=(<path>, ...)]
//	    creates a container, the current one from then on, and upserts the
//	    items of the input, one JSON document a line.
//	put
//	    upserts the items of the input into the current container.
//	set-paths [included=(<path>, ...)] [excluded=(<path>, ...)]
//	    sets the current container's indexed paths (SetProperties).
//	reopen
//	    closes and reopens the database (the index is rebuilt from scratch).
//	explain [@<name>=<json> ...]
//	    Explain of the query in the input, once the index has caught up
//	    (so that the plan does not depend on timing).
//	query [@<name>=<json> ...]
//	    the results of the query: ids for SELECT *, bodies otherwise.
func TestExplainData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := newFakeClock(t0)
	var db *DB
	var c *Container
	defer func() {
		if db != nil {
			db.Close()
		}
	}()
	datadriven.RunTest(t, "testdata/explain", func(t *testing.T, d *datadriven.TestData) string {
		if db == nil {
			db = openTest(t, dir, clk)
		}
		if c == nil && d.Cmd != "container" {
			d.Fatalf(t, "%s before any container", d.Cmd)
		}
		switch d.Cmd {
		case "container":
			p := ContainerProperties{}
			d.ScanArgs(t, "id", &p.ID)
			if a, ok := d.Arg("indexing"); ok {
				switch m := a.SingleVal(t); m {
				case "consistent":
					p.Indexing = IndexingConsistent
				case "lazy":
					p.Indexing = IndexingLazy
				case "none":
					p.Indexing = IndexingNone
				default:
					d.Fatalf(t, "unknown indexing mode %q", m)
				}
			}
			if d.HasArg("default-ttl") {
				var n int32
				d.ScanArgs(t, "default-ttl", &n)
				p.DefaultTTL = TTL(n)
			}
			p.IncludedPaths, p.ExcludedPaths = explainDataPaths(d)
			c = mustCreateContainer(t, db, p)
			explainDataPut(t, d, c)
			return ""

		case "put":
			explainDataPut(t, d, c)
			return ""

		case "set-paths":
			p := c.Properties()
			p.IncludedPaths, p.ExcludedPaths = explainDataPaths(d)
			if err := c.SetProperties(ctx, p); err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return ""

		case "reopen":
			id := c.ID()
			if err := db.Close(); err != nil {
				d.Fatalf(t, "Close: %v", err)
			}
			db = openTest(t, dir, clk)
			var err error
			if c, err = db.Container(id); err != nil {
				d.Fatalf(t, "Container(%q) after reopen: %v", id, err)
			}
			return ""

		case "explain":
			waitIndexed(t, c)
			s, err := c.Explain(d.Input, explainDataParams(t, d)...)
			if err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			return s + "\n"

		case "query":
			var items []Item
			for it, err := range c.Query(ctx, d.Input, explainDataParams(t, d)...) {
				if err != nil {
					return fmt.Sprintf("error: %v\n", err)
				}
				items = append(items, it)
			}
			return resultString(t, d.Input, items) + "\n"
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

func explainDataPut(t *testing.T, d *datadriven.TestData, c *Container) {
	for _, line := range strings.Split(d.Input, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if _, err := c.Upsert(context.Background(), []byte(line)); err != nil {
			d.Fatalf(t, "Upsert(%s): %v", line, err)
		}
	}
}

func explainDataPaths(d *datadriven.TestData) (included, excluded []string) {
	if a, ok := d.Arg("included"); ok {
		included = a.Vals
	}
	if a, ok := d.Arg("excluded"); ok {
		excluded = a.Vals
	}
	return included, excluded
}

// explainDataParams reads the query parameters, "@name=<json>".
func explainDataParams(t *testing.T, d *datadriven.TestData) []Param {
	var ps []Param
	for _, a := range d.CmdArgs {
		if !strings.HasPrefix(a.Key, "@") {
			d.Fatalf(t, "argument %s: want @name=<json>", a)
		}
		var v any
		if err := json.Unmarshal([]byte(a.SingleVal(t)), &v); err != nil {
			d.Fatalf(t, "argument %s: %v", a, err)
		}
		ps = append(ps, Param{a.Key, v})
	}
	return ps
}
