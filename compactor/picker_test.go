package compactor

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestPicker runs the cases of testdata/picker: "pick" with the options as
// arguments and one file's stats a line; the answer is the files dropped
// and the rewrite groups, in order. -rewrite regenerates the answers.
func TestPicker(t *testing.T) {
	datadriven.RunTest(t, "testdata/picker", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "pick" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		var opts PickOptions
		for _, a := range d.CmdArgs {
			var err error
			switch v := a.SingleVal(t); a.Key {
			case "rewrite":
				opts.RewriteThreshold, err = strconv.ParseFloat(v, 64)
			case "small":
				opts.SmallFileBytes, err = strconv.ParseInt(v, 10, 64)
			case "minmerge":
				opts.MinMerge, err = strconv.Atoi(v)
			case "max":
				opts.MaxRewriteBytes, err = strconv.ParseInt(v, 10, 64)
			case "now":
				opts.Now, err = strconv.ParseInt(v, 10, 64)
			case "horizon":
				opts.WaitHorizon, err = strconv.ParseInt(v, 10, 64)
			default:
				err = fmt.Errorf("unknown option")
			}
			if err != nil {
				d.Fatalf(t, "%s: %v", a, err)
			}
		}
		var files []FileStats
		for _, line := range strings.Split(d.Input, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				files = append(files, parseFileStats(t, d, line))
			}
		}
		plan := Pick(files, opts)
		var b strings.Builder
		if len(plan.Drop) > 0 {
			fmt.Fprintf(&b, "drop %s\n", joinNums(plan.Drop))
		}
		for _, g := range plan.Rewrite {
			fmt.Fprintf(&b, "rewrite %s\n", joinNums(g))
		}
		if b.Len() == 0 {
			return "nothing\n"
		}
		return b.String()
	})
}

// parseFileStats reads "file <num> bytes=<n> raw=<n> live=<n> liverec=<n>
// puts=<n> hides=<yes|no> expiresby=<t>"; an absent field is 0.
func parseFileStats(t *testing.T, d *datadriven.TestData, line string) FileStats {
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "file" {
		d.Fatalf(t, "%q: want file <num> <field>=<value>...", line)
	}
	num, err := strconv.ParseUint(fields[1], 10, 32)
	if err != nil {
		d.Fatalf(t, "%q: %v", line, err)
	}
	f := FileStats{Num: uint32(num)}
	for _, kv := range fields[2:] {
		k, v, _ := strings.Cut(kv, "=")
		var dst *int64
		switch k {
		case "bytes":
			dst = &f.FileBytes
		case "raw":
			dst = &f.RawBytes
		case "live":
			dst = &f.LiveBytes
		case "liverec":
			dst = &f.LiveRecords
		case "puts":
			dst = &f.Puts
		case "expiresby":
			dst = &f.ExpiresBy
		case "hides":
			if v != "yes" && v != "no" {
				d.Fatalf(t, "%q: hides=%q, want yes or no", line, v)
			}
			f.HidesLive = v == "yes"
			continue
		default:
			d.Fatalf(t, "%q: unknown field %q", line, k)
		}
		if *dst, err = strconv.ParseInt(v, 10, 64); err != nil {
			d.Fatalf(t, "%q: %s: %v", line, kv, err)
		}
	}
	return f
}

func joinNums(nums []uint32) string {
	s := make([]string, len(nums))
	for i, n := range nums {
		s[i] = strconv.FormatUint(uint64(n), 10)
	}
	return strings.Join(s, ",")
}
