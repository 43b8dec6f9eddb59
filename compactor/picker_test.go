package compactor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPicker runs the data-driven cases in testdata/picker: each file lists
// segment stats and the plan the picker must make.
//
//	options rewrite=0.5 small=1048576 minmerge=4 max=67108864 now=<t> horizon=<s>
//	file <num> bytes=<n> raw=<n> live=<n> liverec=<n> puts=<n> hides=<yes|no> expiresby=<t>
//	drop <num>,<num>
//	rewrite <num>,<num>        (one line per group, in order)
func TestPicker(t *testing.T) {
	paths, err := filepath.Glob("testdata/picker/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no picker cases: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			files, opts, want := readPickerCase(t, path)
			got := Pick(files, opts)
			if g, w := fmt.Sprint(got.Drop), fmt.Sprint(want.Drop); g != w {
				t.Errorf("drop %s, want %s", g, w)
			}
			if g, w := fmt.Sprint(got.Rewrite), fmt.Sprint(want.Rewrite); g != w {
				t.Errorf("rewrite %s, want %s", g, w)
			}
		})
	}
}

func readPickerCase(t *testing.T, path string) ([]FileStats, PickOptions, Plan) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var files []FileStats
	var opts PickOptions
	var want Plan
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		kv := map[string]string{}
		for _, p := range fields[1:] {
			if k, v, ok := strings.Cut(p, "="); ok {
				kv[k] = v
			}
		}
		num := func(k string) int64 {
			v, err := strconv.ParseInt(kv[k], 10, 64)
			if kv[k] != "" && err != nil {
				t.Fatalf("%s:%d: %s=%q: %v", path, line, k, kv[k], err)
			}
			return v
		}
		switch fields[0] {
		case "options":
			r, _ := strconv.ParseFloat(kv["rewrite"], 64)
			opts = PickOptions{RewriteThreshold: r, SmallFileBytes: num("small"), MinMerge: int(num("minmerge")), MaxRewriteBytes: num("max"),
				Now: num("now"), WaitHorizon: num("horizon")}
		case "file":
			n, err := strconv.ParseUint(fields[1], 10, 32)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, line, err)
			}
			files = append(files, FileStats{Num: uint32(n), FileBytes: num("bytes"), RawBytes: num("raw"),
				LiveBytes: num("live"), LiveRecords: num("liverec"), Puts: num("puts"), HidesLive: kv["hides"] == "yes",
				ExpiresBy: num("expiresby")})
		case "drop":
			want.Drop = parseNums(t, fields[1:])
		case "rewrite":
			want.Rewrite = append(want.Rewrite, parseNums(t, fields[1:]))
		default:
			t.Fatalf("%s:%d: unknown directive %q", path, line, fields[0])
		}
	}
	return files, opts, want
}

func parseNums(t *testing.T, fields []string) []uint32 {
	var out []uint32
	for _, f := range fields {
		for _, s := range strings.Split(f, ",") {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				t.Fatalf("bad number %q", s)
			}
			out = append(out, uint32(n))
		}
	}
	return out
}
