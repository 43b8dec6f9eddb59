// Package testknobs is the one list of the EBB_* environment variables that
// ebb's tests, benchmarks and test scripts read: their names, defaults and
// meanings. README.md's testing section shows the same table; a test keeps
// the list, the code and the README in step.
package testknobs

// Knob is one environment variable.
type Knob struct {
	Name    string
	Default string // "" when unset means off or a random seed
	Meaning string
}

// All is every knob, grouped by the test that reads it.
var All = []Knob{
	// engine: randomized tests (package engine_test)
	{"EBB_MODEL_SEED", "random", "TestModel: replay this seed (every run logs its seed)"},
	{"EBB_MODEL_OPS", "per variant", "TestModel: random operations per variant"},
	{"EBB_MODEL_TRACE", "", "TestModel: 1 logs every operation and its outcome"},
	{"EBB_MODEL_SHRINK", "", "TestModel: 1 shrinks a failing sequence to a minimal one"},
	{"EBB_LINEARIZE_OPS", "see linearize_test.go", "TestLinearizable: number of operations"},
	{"EBB_LINEARIZE_SEED", "random", "TestLinearizable: replay the schedule (not the interleaving)"},
	{"EBB_LINEARIZE_VIS", "", "TestLinearizable: write porcupine's HTML visualization of a failure to this path"},
	{"EBB_POWERLOSS_ROUNDS", "100 (20 with -short)", "TestPowerLoss: power cuts"},
	{"EBB_POWERLOSS_SEED", "random", "TestPowerLoss: replay the random choices"},
	{"EBB_CLOCKFAULT_SEED", "random", "TestClockFaults: replay the schedule (not the interleaving)"},
	{"EBB_DAMAGE_SEED", "random", "damage tests: replay one run"},
	{"EBB_DAMAGE_KINDS_SEEDS", "3", "TestDamageEveryFileKind: seeds per (file, damage) pair"},
	{"EBB_CRASH_CHILD", "", "internal: set by the lock tests and TestFeedExactlyOnceAcrossKills for their child process (trylock, hold or feed)"},
	{"EBB_CRASH_DIR", "", "internal: the database directory of that child"},
	// engine: white-box tests and benchmarks (package engine)
	{"EBB_QUERY_ROUNDS", "see query_model_test.go", "TestQueryModel: rounds of random queries"},
	{"EBB_QUERY_BENCH_N", "100000 (20000 in a test run)", "query benchmarks: items loaded"},
	{"EBB_OPEN_ITEMS", "100000", "BenchmarkOpen: items to fill"},
	{"EBB_OPEN_DIR", "a temporary directory", "BenchmarkOpen: keep the filled database there and reuse it"},
	{"EBB_SCALE", "", "TestScale: item counts to measure (e.g. 100000,1000000); skipped when unset"},
	{"EBB_SCALE_IDLEN", "36", "TestScale: id length"},
	{"EBB_CHURN", "", "TestChurnBench: load duration (e.g. 60s); skipped when unset"},
	{"EBB_CHURN_RATE", "2000", "TestChurnBench: writes per second"},
	{"EBB_CHURN_WRITERS", "16", "TestChurnBench: concurrent writers"},
	{"EBB_CHURN_READS", "1000", "TestChurnBench: point reads per second"},
	{"EBB_CHURN_DRAIN", "20s", "TestChurnBench: sampling after the load (compactor on only)"},
	{"EBB_CHURN_MODES", "on,off", "TestChurnBench: which runs, in order"},
	{"EBB_CHURN_SEAL", "64MiB", "TestChurnBench: Options.SealThreshold"},
	{"EBB_CHURN_JSEG", "16MiB", "TestChurnBench: Options.JournalSegmentSize"},
	{"EBB_CHURN_CRATE", "64MiB", "TestChurnBench: Options.CompactionRate (bytes/s)"},
	{"EBB_CHURN_INTERVAL", "1s", "TestChurnBench: Options.CompactionInterval"},
	{"EBB_CHURN_REWRITE", "0.5", "TestChurnBench: Options.RewriteThreshold"},
	{"EBB_CHURN_COMPRESSION", "the default", "TestChurnBench: Options.Compression (zstd, s2 or none)"},
	{"EBB_CHURN_SAMPLES", "0", "TestChurnBench: print every n-th sample row (0: all)"},
	{"EBB_CHURN_PROF", "", "TestChurnBench: write mutex and block profiles of each run to this directory"},
	// engine/crashloop
	{"EBB_CRASHLOOP_SOAK", "", "TestCrashLoop: run this long (e.g. 10m)"},
	{"EBB_CRASHLOOP_SEED", "random", "TestCrashLoop: replay a run; also passed to the child"},
	{"EBB_CRASHLOOP_CHILD", "", "internal: 1 in the crash loop's child process"},
	{"EBB_CRASHLOOP_DIR", "", "internal: the child's database directory"},
	{"EBB_CRASHLOOP_WALL", "", "internal: the child's wall clock at the start (unix seconds)"},
	{"EBB_CRASHLOOP_TRUE", "", "internal: the true time at the child's start (unix seconds)"},
	{"EBB_CRASHLOOP_ROUND", "", "internal: the child's round number"},
	{"EBB_CRASHLOOP_WORKERS", "", "internal: the child's worker count"},
	{"EBB_CRASHLOOP_FAULTS", "", "internal: 1 when the child's clock jumps"},
	// cmd/ebb
	{"EBB_TEST_MAIN", "", "internal: 1 makes the cmd/ebb test binary run ebb itself"},
	{"EBB_TEST_WRITER", "", "internal: makes the cmd/ebb test binary a busy writer on this directory"},
	// scripts/test.sh
	{"EBB_FUZZTIME", "30000x", "scripts/test.sh: executions per fuzz target (0 skips fuzzing)"},
	// cmd/ebb/sdktest and scripts/sdk-emulator.sh: the official SDKs against ebb serve
	{"EBB_BIN", "built from the repository", "cmd/ebb/sdktest and scripts/sdk-emulator.sh: the ebb binary whose `serve` they test"},
	{"EBB_REQUIRE_NODE", "", "TestJavaScriptSDKSmoke: 1 (set by .ci/run) fails instead of skipping when node or npm is missing"},
	{"EBB_ENDPOINT", "https://localhost:8081/", "cmd/ebb/sdktest/js/smoke.mjs: the ebb serve endpoint (TestJavaScriptSDKSmoke sets it)"},
	{"EBB_KEY", "the emulator's key", "cmd/ebb/sdktest/js/smoke.mjs: the master key"},
	{"EBB_SDK_LATENCY_N", "300", "TestLoopbackLatency: point reads and upserts measured"},
	{"EBB_SERVE_FLAGS", "", "scripts/sdk-emulator.sh: extra flags for ebb serve"},
	{"EBB_SDK_KEEP", "", "scripts/sdk-emulator.sh: 1 keeps its temporary directory (SDK test log, server log, data)"},
	{"EBB_SDK_TIMEOUT", "10m", "scripts/sdk-emulator.sh: go test -timeout of the SDK's suite"},
}
