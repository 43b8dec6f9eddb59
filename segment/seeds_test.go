package segment

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the fuzz seed corpora under testdata/fuzz")

// TestWriteFuzzSeeds writes real records, blocks and segments as seed
// corpora for the fuzz targets: go test -run WriteFuzzSeeds -update-seeds.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite testdata/fuzz")
	}
	seeds := map[string][][]any{}
	for i, tc := range recordCases {
		if len(AppendRecord(nil, &tc.rec)) < 4096 {
			seeds["FuzzDecodeRecord"] = append(seeds["FuzzDecodeRecord"], []any{AppendRecord(nil, &recordCases[i].rec)})
		}
	}
	var recs []byte
	for i := range 12 {
		r := benchRecord
		r.Seq += uint64(i)
		recs = AppendRecord(recs, &r)
	}
	recs = AppendRecord(recs, &recordCases[1].rec)
	for _, c := range compressions {
		seeds["FuzzBlock"] = append(seeds["FuzzBlock"],
			[]any{appendBlock(nil, recs, c, kindData), uint8(kindData)},
			[]any{appendBlock(nil, recs, c, kindIndex), uint8(kindIndex)})
		seg, _, _ := smallSegment(t, c)
		seeds["FuzzSegment"] = append(seeds["FuzzSegment"], []any{seg})
	}
	empty, _, _ := writeSegment(t, t.TempDir(), nil, DefaultWriterOptions())
	b, err := os.ReadFile(empty)
	if err != nil {
		t.Fatal(err)
	}
	seeds["FuzzSegment"] = append(seeds["FuzzSegment"], []any{b})

	for name, list := range seeds {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, args := range list {
			var sb strings.Builder
			sb.WriteString("go test fuzz v1\n")
			for _, a := range args {
				switch v := a.(type) {
				case []byte:
					sb.WriteString("[]byte(" + strconv.Quote(string(v)) + ")\n")
				case uint8:
					sb.WriteString(fmt.Sprintf("byte(%d)\n", v))
				}
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(sb.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
