package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbdb/ebb/bench/internal/store"
)

// tiny is a suite small enough for a test: seconds per store.
func tiny(t *testing.T, stores ...string) *Config {
	return &Config{
		Stores:  stores,
		Dir:     t.TempDir(),
		Out:     t.TempDir(),
		DocSize: 1024,
		Suite:   "tiny",
		Store:   store.Options{SweepInterval: 200 * time.Millisecond, CompactInterval: 500 * time.Millisecond},
		Fill:    FillConfig{N: 300, Batch: 50, Writers: []int{1, 4}, TTL: 3600, MaxTime: time.Second},
		Read:    ReadConfig{N: 300, Readers: []int{1, 2}, Phase: 100 * time.Millisecond},
		Churn: ChurnConfig{Duration: 1500 * time.Millisecond, TTL: 1, Writers: 2, Batch: 20, Rate: 2000,
			Drain: 1500 * time.Millisecond, Sample: 250 * time.Millisecond},
		Storm: StormConfig{N: 500, Foreground: 100, Rate: 200, Workers: 4, ReadShare: 0.9,
			Baseline: 500 * time.Millisecond, After: time.Second, Window: 100 * time.Millisecond, Batch: 50},
		Scale: ScaleConfig{Sizes: []int{200, 500}, Batch: 100, Writers: 2, TTL: 3600, Budget: time.Minute, MaxHeap: 1 << 30},
		Query: QueryConfig{N: 2000, DocSize: 750, Batch: 100, PerUser: 200, Width: 1000, TopK: 10, LongTTL: 3600,
			MinRuns: 30, MaxRuns: 60, Margin: 300 * time.Millisecond, Settle: 100 * time.Millisecond, MaxSettle: 3 * time.Second,
			StormN: 200, StormBefore: 300 * time.Millisecond, StormAfter: 700 * time.Millisecond},
	}
}

// TestWorkloadsPerStore runs every workload end to end on each store with
// tiny sizes, and checks that the results hold together.
func TestWorkloadsPerStore(t *testing.T) {
	for _, name := range store.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := tiny(t, name)
			var log bytes.Buffer
			cfg.Log = &log
			run, err := Execute(context.Background(), cfg, "test", All)
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			if len(run.Results) != len(All) {
				t.Fatalf("%d results", len(run.Results))
			}
			for _, r := range run.Results {
				checkResult(t, cfg, name, r)
				if r.Name() == "query" && !store.CanQuery(name) {
					continue
				}
				if !strings.Contains(r.Markdown(), "| "+name+" |") {
					t.Errorf("%s table has no row for %s:\n%s", r.Name(), name, r.Markdown())
				}
				b, err := os.ReadFile(filepath.Join(cfg.Out, r.Name()+".json"))
				if err != nil {
					t.Fatal(err)
				}
				var rec map[string]any
				if err := json.Unmarshal(b, &rec); err != nil {
					t.Fatalf("%s.json: %v", r.Name(), err)
				}
				if rec["workload"] != r.Name() || rec["result"] == nil || rec["machine"] == nil {
					t.Errorf("%s.json lacks fields: %v", r.Name(), rec)
				}
			}
			for _, c := range []string{"churn.png", "storm.png"} {
				f, err := os.Open(filepath.Join(cfg.Out, c))
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(f)
				f.Close()
				if err != nil || img.Bounds().Dx() < 200 {
					t.Fatalf("%s: %v", c, err)
				}
			}
			// Everything the workloads created is gone.
			ents, _ := os.ReadDir(cfg.Dir)
			for _, e := range ents {
				sub, _ := os.ReadDir(filepath.Join(cfg.Dir, e.Name(), name))
				if len(sub) > 0 {
					t.Errorf("%s/%s left behind: %v", e.Name(), name, sub)
				}
			}
		})
	}
}

func checkResult(t *testing.T, cfg *Config, name string, r Result) {
	t.Helper()
	switch r := r.(type) {
	case *FillResult:
		if len(r.Rows) != 4 {
			t.Fatalf("fill: %d rows", len(r.Rows))
		}
		for _, row := range r.Rows {
			if row.Items == 0 || row.WritesPerSec <= 0 || row.DiskPerItem <= 0 || row.OpenMillis <= 0 {
				t.Errorf("fill row %+v", row)
			}
			if row.Mode == "batch" && row.Items != cfg.Fill.N {
				t.Errorf("fill batch wrote %d of %d", row.Items, cfg.Fill.N)
			}
		}
	case *ReadResult:
		if len(r.Rows) != 4 {
			t.Fatalf("read: %d rows", len(r.Rows))
		}
		for _, row := range r.Rows {
			if row.Reads == 0 || row.Wrong != 0 || row.Latency.P99 <= 0 || row.Latency.P50 > row.Latency.P99 {
				t.Errorf("read row %+v", row)
			}
		}
	case *ChurnResult:
		s := r.Stores[0]
		if s.Items == 0 || s.PeakDisk == 0 || len(s.Samples) < 4 {
			t.Fatalf("churn %+v", s)
		}
		var sawLive bool
		for _, x := range s.Samples {
			sawLive = sawLive || x.Live > 0
		}
		if !sawLive {
			t.Errorf("churn: no live bytes sampled")
		}
		// Every item has expired by the end of the drain.
		if last := s.Samples[len(s.Samples)-1]; last.Live != 0 {
			t.Errorf("churn: %d live bytes at the end", last.Live)
		}
	case *StormResult:
		s := r.Stores[0]
		if s.Before.Count == 0 || s.After.Count == 0 || s.PeakDisk == 0 || len(s.Windows) == 0 || len(s.Disk) == 0 {
			t.Fatalf("storm %+v", s)
		}
		if s.OpsPerSec < float64(cfg.Storm.Rate)/2 {
			t.Errorf("storm: %v ops/s of %d", s.OpsPerSec, cfg.Storm.Rate)
		}
	case *ScaleResult:
		if len(r.Rows) != 2 {
			t.Fatalf("scale: %d rows", len(r.Rows))
		}
		for _, row := range r.Rows {
			if row.Skipped != "" || row.OpenMillis <= 0 || row.DiskPerItem <= 0 {
				t.Errorf("scale row %+v", row)
			}
		}
	case *QueryResult:
		if !store.CanQuery(name) {
			if len(r.Stores) != 0 || len(r.Skipped) != 1 {
				t.Fatalf("query on %s: %+v", name, r)
			}
			return
		}
		if len(r.Stores) != 1 {
			t.Fatalf("query: %d stores", len(r.Stores))
		}
		checkQueryRun(t, cfg, r.Stores[0])
	default:
		t.Fatalf("unexpected result %T", r)
	}
}

// TestChurnAnalyze checks the summary figures on made-up samples.
func TestChurnAnalyze(t *testing.T) {
	c := ChurnConfig{Duration: 10 * time.Second, TTL: 2, Drain: 5 * time.Second}
	run := ChurnRun{Store: "ebb", ReclaimLag: -1}
	for i := 1; i <= 15; i++ {
		s := ChurnSample{T: float64(i), Live: 100, Disk: 200, Report: map[string]float64{"reclaim_lag_s": 1, "space_amplification": 1.5}}
		if i == 3 {
			s.Disk = 400 // the peak, before the steady window
		}
		if i > 10 {
			s.Live = 0
			s.Disk = 200 - int64(i-10)*50
		}
		run.Samples = append(run.Samples, s)
	}
	run.analyze(c, 12) // the last item expired at 12 s
	if run.SteadyAmp != 2 {
		t.Errorf("steady amp %v, want 2", run.SteadyAmp)
	}
	if run.MaxAmp != 4 || run.PeakDisk != 400 {
		t.Errorf("max amp %v peak %v", run.MaxAmp, run.PeakDisk)
	}
	// Disk <= 40 (10% of 400) first at 14 s (disk 0): 2 s after 12.
	if run.ReclaimLag != 2 {
		t.Errorf("reclaim lag %v, want 2", run.ReclaimLag)
	}
	if run.EbbReclaimLag != 1 || run.EbbSpaceAmp != 1.5 || run.Watched != 3 {
		t.Errorf("ebb figures %v %v, watched %v", run.EbbReclaimLag, run.EbbSpaceAmp, run.Watched)
	}
	if run.EbbCompactionWA != 0 {
		t.Errorf("compaction write amplification %v without sealed bytes", run.EbbCompactionWA)
	}
	last := &run.Samples[len(run.Samples)-1]
	last.Report = map[string]float64{"sealed_bytes": 1000, "compacted_written": 250, "files_dropped": 7, "files_rewritten": 2}
	run.analyze(c, 12)
	if run.EbbCompactionWA != 1.25 || run.EbbFilesDropped != 7 || run.EbbFilesRewritten != 2 {
		t.Errorf("compaction write amplification %v, dropped %d, rewritten %d; want 1.25, 7, 2",
			run.EbbCompactionWA, run.EbbFilesDropped, run.EbbFilesRewritten)
	}
	if md := (&ChurnResult{Config: c, Stores: []ChurnRun{run}}).Markdown(); !strings.Contains(md, "write amplification of compaction: 1.25") {
		t.Errorf("markdown leaves out the compaction write amplification:\n%s", md)
	}
	never := ChurnRun{ReclaimLag: -1, Samples: []ChurnSample{{T: 1, Disk: 100, Live: 50}, {T: 20, Disk: 100}}}
	never.analyze(c, 12)
	if never.ReclaimLag != -1 {
		t.Errorf("reclaim lag %v for a disk that never shrinks", never.ReclaimLag)
	}
	if !strings.Contains((&ChurnResult{Config: c, Stores: []ChurnRun{run, never}}).Markdown(), "> 8") {
		t.Errorf("markdown does not say the lag exceeds the watch")
	}
}

// TestStormAnalyze checks the windows and the half-peak time.
func TestStormAnalyze(t *testing.T) {
	c := StormConfig{Baseline: 2 * time.Second, After: 2 * time.Second, Window: 500 * time.Millisecond}
	start := time.Unix(1000, 0)
	expiry, end := start.Add(2*time.Second), start.Add(4*time.Second)
	var ops []opSample
	for at := time.Duration(0); at < 4*time.Second; at += 10 * time.Millisecond {
		lat := time.Millisecond
		if at >= 2*time.Second && at < 2500*time.Millisecond {
			lat = 10 * time.Millisecond
		}
		ops = append(ops, opSample{at: at, lat: lat})
	}
	run := StormRun{HalfSeconds: -1, Disk: []DiskPoint{{T: -1, Bytes: 100}, {T: 0, Bytes: 100}, {T: 0.5, Bytes: 60}, {T: 1, Bytes: 40}}}
	run.analyze(c, [][]opSample{ops}, start, expiry, end)
	near := func(v, want float64) bool { return v > want*0.99 && v < want*1.01 }
	if !near(run.Before.P99, 1000) || !near(run.After.Max, 10000) || run.Before.Count != 150 || run.After.Count != 200 {
		t.Errorf("before %+v after %+v", run.Before, run.After)
	}
	if run.HalfSeconds != 1 || run.PeakDisk != 100 {
		t.Errorf("half %v peak %v", run.HalfSeconds, run.PeakDisk)
	}
	if len(run.Windows) != 8 || run.Windows[4].T != 0 || run.Windows[4].P99 != 10000 || run.Windows[3].P99 != 1000 {
		t.Errorf("windows %+v", run.Windows)
	}
	if run.OpsPerSec != 100 {
		t.Errorf("ops/s %v", run.OpsPerSec)
	}
}

// TestReportKeepsNotes: a regenerated report keeps the notes block.
func TestReportKeepsNotes(t *testing.T) {
	cfg := tiny(t, "ebb")
	run := &Run{Command: "cd bench && go run .", Suite: "tiny", Stores: []string{"ebb", "badger"}, DocSize: 1024,
		Started: time.Now(), Finished: time.Now().Add(time.Minute), Charts: map[string]string{"churn": "churn.png"},
		Results: []Result{&ChurnResult{Config: cfg.Churn, Stores: []ChurnRun{{Store: "ebb", WritesPerSec: 10}, {Store: "badger", WritesPerSec: 20}}}}}
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	if err := WriteReport(path, cfg, run, "results"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, want := range []string{"## churn", "![churn](results/churn.png)", "| badger | 20.0 | 2.00× |", "cd bench && go run .", notesBegin, "No notes yet"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q:\n%s", want, b)
		}
	}
	edited := strings.Replace(string(b), "_No notes yet._", "ebb loses X because Y.", 1)
	os.WriteFile(path, []byte(edited), 0o644)
	if err := WriteReport(path, cfg, run, "results"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if !strings.Contains(string(b), "ebb loses X because Y.") || strings.Contains(string(b), "No notes yet") {
		t.Errorf("notes not kept:\n%s", b)
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{ratio(2, 1), "2.00×"}, {ratio(1, 0), "–"}, {ratio(150, 1), "150×"}, {ratio(15, 1), "15.0×"},
		{num(123456), "123k"}, {num(1234567), "1.23M"}, {num(0.5), "0.500"}, {num(9999), "9999"},
		{bytesStr(3 << 20), "3.00 MiB"}, {bytesStr(512), "512 B"}, {ms(2500), "2.50"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
