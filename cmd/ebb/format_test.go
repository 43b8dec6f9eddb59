package main

import (
	"testing"

	"github.com/ebbdb/ebb/engine"
	"github.com/ebbdb/ebb/engine/tool"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtBytes(0), "0 B"},
		{fmtBytes(1023), "1023 B"},
		{fmtBytes(1536), "1.5 KiB"},
		{fmtBytes(5 << 30), "5.0 GiB"},
		{fmtTTL(nil), "off"},
		{fmtTTL(engine.TTL(-1)), "-1"},
		{fmtTTL(engine.TTL(3600)), "3600s"},
		{fmtItemTTL(0), "-"},
		{fmtItemTTL(-1), "-1"},
		{fmtRel(100, 100), "now"},
		{fmtRel(110, 100), "in 10s"},
		{fmtRel(100, 160), "1m ago"},
		{fmtRel(100+3600, 100), "in 1h"},
		{fmtRel(100+3723, 100), "in 1h2m3s"},
		{fmtRel(100+7200+60, 100), "in 2h1m"},
		{fmtTime(1_700_000_000), "2023-11-14 22:13:20Z"},
		{fmtRange(nil), "-"},
		{fmtRange(&tool.TimeRange{Min: 1_700_000_000, Max: 1_700_000_000}), "2023-11-14 22:13:20Z"},
		{fmtRange(&tool.TimeRange{Min: 1_700_000_000, Max: 1_700_000_010}), "2023-11-14 22:13:20Z..22:13:30Z"},
		{fmtRange(&tool.TimeRange{Min: 1_700_000_000, Max: 1_700_100_000}), "2023-11-14 22:13:20Z..2023-11-16 02:00:00Z"},
		{fmtShare(0), "0%"},
		{fmtShare(0.004), "<1%"},
		{fmtShare(0.5), "50%"},
		{fmtSeq(&tool.SeqRange{First: 3, Last: 9}), "3-9"},
		{fmtFiles(nil), "-"},
		{fmtFiles([]uint32{1, 4}), "1,4"},
		{quoteID("a b"), `"a b"`},
		{quoteID("plain"), "plain"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, s := range []string{"1700000000", "2023-11-14T22:13:20Z"} {
		if tm, err := parseTime(s); err != nil || tm.Unix() != 1_700_000_000 {
			t.Errorf("parseTime(%q) = %v, %v", s, tm, err)
		}
	}
	if _, err := parseTime("soon"); err == nil {
		t.Error("parseTime(soon) did not fail")
	}
}
