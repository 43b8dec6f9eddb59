package docfmt

import (
	"bytes"
	"strings"
	"testing"
)

// TestRender checks the rendered body byte for byte, both into a fresh
// allocation and appended to a buffer with room, which must keep what the
// buffer held.
func TestRender(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		stored, want string
		ts           int64
		etag         string
	}{
		{`{"id":"a","n":1}`, `{"_ts":1700000000,"_etag":"\"0000000000000001\"","id":"a","n":1}`, 1700000000, ETag(1)},
		{` { "id":"a" } `, `{"_ts":5,"_etag":"e","id":"a" } `, 5, "e"},
		{`{}`, `{"_ts":-1,"_etag":"e"}`, -1, "e"},
		{" {\n\t} ", `{"_ts":0,"_etag":"e"}`, 0, "e"},
		{`{"id":"b"}`, `{"_ts":-9223372036854775808,"_etag":"` + long + `","id":"b"}`, -1 << 63, long},
	} {
		if got := Render(nil, []byte(tc.stored), tc.ts, tc.etag); string(got) != tc.want {
			t.Errorf("Render(nil, %q) = %s, want %s", tc.stored, got, tc.want)
		}
		for _, room := range []int{0, 10, len(tc.want) + 10} {
			dst := append(make([]byte, 0, 3+room), "abc"...)
			got := Render(dst, []byte(tc.stored), tc.ts, tc.etag)
			if string(got) != "abc"+tc.want {
				t.Errorf("Render(%d bytes of room, %q) = %s, want abc%s", room, tc.stored, got, tc.want)
			}
			if room >= len(tc.want) && &got[0] != &dst[0] {
				t.Errorf("Render with %d bytes of room allocated", room)
			}
		}
	}
}

// TestRenderFitsRenderedSize checks the bound callers size buffers by.
func TestRenderFitsRenderedSize(t *testing.T) {
	for _, stored := range []string{`{}`, `{"id":"a"}`, `{"id":"` + strings.Repeat("y", 5000) + `"}`} {
		got := Render(nil, []byte(stored), -1<<63, ETag(1<<64-1))
		if n := RenderedSize([]byte(stored)); len(got) > n {
			t.Errorf("rendered %d bytes, RenderedSize says at most %d", len(got), n)
		}
		if !bytes.HasPrefix(got, []byte(`{"_ts":`)) || got[len(got)-1] != '}' {
			t.Errorf("rendered %.40s…", got)
		}
	}
}

// TestRenderSeq checks that RenderSeq renders what Render does given
// ETag(seq), and AppendETag what ETag returns.
func TestRenderSeq(t *testing.T) {
	for _, stored := range []string{`{"id":"a","n":1}`, ` { "id":"a" } `, `{}`, " {\n\t} ", `{"id":"` + strings.Repeat("y", 500) + `"}`} {
		for _, ts := range []int64{0, -1, 1700000000, -1 << 63, 1<<63 - 1} {
			for _, seq := range []uint64{0, 1, 0xabcdef, 1<<64 - 1} {
				want := Render([]byte("pre"), []byte(stored), ts, ETag(seq))
				if got := RenderSeq([]byte("pre"), []byte(stored), ts, seq); !bytes.Equal(got, want) {
					t.Errorf("RenderSeq(%q, %d, %d) = %s, want %s", stored, ts, seq, got, want)
				}
				if got := AppendETag([]byte("x"), seq); string(got) != "x"+ETag(seq) {
					t.Errorf("AppendETag(%d) = %s, want x%s", seq, got, ETag(seq))
				}
			}
		}
	}
}
