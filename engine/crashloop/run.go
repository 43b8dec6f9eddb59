package crashloop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Run runs the crash loop that cfg describes: rounds of a child process
// running the workload on Dir/db, killed with SIGKILL at a random moment,
// each followed by a reopen that checks the database against the child's
// log. It stops at the first violation, which it returns both in the
// Report and as the error (matching ErrViolation). Other errors (Config,
// a child that cannot start, ctx done) come with the Report so far.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Dir == "" || cfg.Command == nil {
		return Report{}, errors.New("crashloop: Config.Dir and Config.Command are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 20
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	dbDir := filepath.Join(cfg.Dir, "db")
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return Report{}, fmt.Errorf("crashloop: %w", err)
	}
	start := time.Now()
	rep := Report{Seed: cfg.Seed}
	l := &loop{cfg: cfg, dbDir: dbDir, rep: &rep, ck: &checker{dbDir: dbDir, m: newModel(), rep: &rep},
		rng: rand.New(rand.NewPCG(cfg.Seed, 1))}
	l.tru = 1_700_000_000 + l.rng.Int64N(100_000_000)
	l.wall = l.tru
	err := l.rounds(ctx, start)
	if err == nil {
		err = l.final(ctx)
	}
	rep.Duration = time.Since(start)
	if cfg.Progress != nil {
		l.report(true)
	}
	return rep, err
}

// loop is the parent's state across rounds.
type loop struct {
	cfg      Config
	dbDir    string
	rep      *Report
	ck       *checker
	rng      *rand.Rand
	tru      int64 // the true time, unix seconds
	wall     int64 // the wall clock last used
	progress time.Time
	start    time.Time
}

func (l *loop) rounds(ctx context.Context, start time.Time) error {
	l.start = start
	for round := 0; ; round++ {
		if l.cfg.Duration > 0 {
			if round > 0 && time.Since(start) >= l.cfg.Duration {
				return nil
			}
		} else if round >= l.cfg.Rounds {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		x0 := l.nextWall()
		r := newRoundLog(round, l.ck.m, x0)
		stderr, err := l.runChild(ctx, round, x0, r)
		if err != nil {
			return err
		}
		l.rep.Rounds++
		l.wall = r.lastWall
		l.tru = max(l.tru, r.lastTrue())
		l.ck.afterRound(ctx, r, l.nextWall(), l.rng.IntN(3) == 0)
		l.count(r)
		if r.violation != nil {
			return l.violation(r, stderr)
		}
		if l.cfg.Progress != nil && (l.cfg.Duration == 0 || time.Since(l.progress) >= 5*time.Second) {
			l.report(false)
		}
	}
}

// final reopens the database twice more after the last round, with no
// child in between: each reopen must find exactly the model, before and
// after compacting everything.
func (l *loop) final(ctx context.Context) error {
	for k := range 2 {
		r := newRoundLog(l.rep.Rounds+k, l.ck.m, l.wall)
		l.ck.afterRound(ctx, r, l.nextWall(), true)
		l.count(r)
		if r.violation != nil {
			return l.violation(r, "")
		}
	}
	return nil
}

// nextWall moves the true time on by a few seconds and returns the next
// wall clock: with clock faults, sometimes hours behind or ahead of it, or
// after a leap of the true time by hours.
func (l *loop) nextWall() int64 {
	l.tru += 1 + l.rng.Int64N(10)
	w := l.tru
	if l.cfg.ClockFaults {
		switch x := l.rng.IntN(10); {
		case x < 2:
			w -= 3600 * (1 + l.rng.Int64N(6))
		case x < 3:
			w += 600 + l.rng.Int64N(2*3600)
		case x < 4:
			l.tru += 3600 + l.rng.Int64N(2*3600)
			w = l.tru
		}
	}
	switch d := w - l.wall; {
	case d <= -600:
		l.rep.ClockJumpsBack++
	case d >= 600:
		l.rep.ClockJumpsForward++
	}
	l.wall = w
	return w
}

// count adds what round r did to the report.
func (l *loop) count(r *roundLog) {
	rep := l.rep
	var inflight int64
	for _, req := range r.order {
		if req.end < 0 {
			inflight += int64(len(req.ops))
		}
	}
	rep.OpsAcknowledged += r.acked
	rep.OpsInFlight += inflight
	rep.OpsChecked += r.checked + inflight
	rep.Compactions += r.compactions
	rep.PolicyChanges += r.policies
	rep.ClockJumpsBack += r.jumpsB
	rep.ClockJumpsForward += r.jumpsF
	rep.ExpiriesRelied += r.reliedN
}

// violation completes r's violation, keeps the round's log beside the
// database, and returns it.
func (l *loop) violation(r *roundLog, stderr string) error {
	v := r.violation
	v.Seed, v.DBDir = l.cfg.Seed, l.dbDir
	v.Lines = r.linesAbout(r.violationLinesFor, 60)
	var b strings.Builder
	for _, ln := range r.lines {
		b.WriteString(ln.text + "\n")
	}
	if stderr != "" {
		b.WriteString("--- child stderr\n" + stderr)
	}
	path := filepath.Join(l.cfg.Dir, fmt.Sprintf("round-%d.log", r.round))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err == nil {
		v.Log = path
	}
	l.rep.Violation = v
	return v
}

func (l *loop) report(final bool) {
	l.progress = time.Now()
	rep := l.rep
	what := "round"
	if final {
		what = "done:"
	}
	fmt.Fprintf(l.cfg.Progress, "%s %d: %d ops acknowledged, %d checked, %d items checked, %d kills, clock jumps %d back %d forward, %d lags, %d expiries relied on, %d kills at a hold, %s\n",
		what, rep.Rounds, rep.OpsAcknowledged, rep.OpsChecked, rep.ItemsChecked, rep.Kills, rep.ClockJumpsBack, rep.ClockJumpsForward, rep.ClockLags,
		rep.ExpiriesRelied, rep.HoldKills, time.Since(l.start).Round(100*time.Millisecond))
}

// runChild runs round's child on wall clock x0, kills it with SIGKILL and
// feeds its log into r. It returns the child's stderr.
func (l *loop) runChild(ctx context.Context, round int, x0 int64, r *roundLog) (string, error) {
	env := []string{
		envChild + "=1",
		envDir + "=" + l.dbDir,
		envWall + "=" + strconv.FormatInt(x0, 10),
		envTrue + "=" + strconv.FormatInt(l.tru, 10),
		envRound + "=" + strconv.Itoa(round),
		envSeed + "=" + strconv.FormatUint(l.cfg.Seed+uint64(round)*7919, 10),
		envWorkers + "=" + strconv.Itoa(l.cfg.Workers),
		envFaults + "=" + map[bool]string{true: "1", false: "0"}[l.cfg.ClockFaults],
	}
	cmd := l.cfg.Command(env)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("crashloop: round %d: %w", round, err)
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("crashloop: round %d: start the child: %w", round, err)
	}
	l.rep.Restarts++
	lines := make(chan []string, 1)
	ready, held := make(chan struct{}), make(chan struct{})
	var acks atomic.Int64
	go func() { lines <- readLines(out, ready, held, &acks) }()

	// Mostly kill once the workload has had a random number of writes
	// acknowledged (so that slow machines, -race, still get work done),
	// a random few milliseconds after that; sometimes during Open, while
	// recovery runs; with clock faults, sometimes right at the child's
	// "held" line (see controller.hold).
	early := l.rng.IntN(6) == 0
	atHold := !early && l.cfg.ClockFaults && l.rng.IntN(4) == 0
	switch {
	case early:
		sleepCtx(ctx, time.Duration(l.rng.IntN(40))*time.Millisecond)
	case atHold:
		select {
		case <-held:
		case <-ctx.Done():
		case <-time.After(60 * time.Second):
		}
	default:
		select {
		case <-ready:
		case <-ctx.Done():
		case <-time.After(60 * time.Second):
		}
		target, deadline := int64(l.rng.IntN(500)), time.Now().Add(time.Second)
		for acks.Load() < target && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		sleepCtx(ctx, time.Duration(l.rng.IntN(20))*time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	got := <-lines
	werr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	for _, ln := range got {
		r.add(ln)
	}
	if atHold && r.held {
		l.rep.HoldKills++
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			l.rep.Kills++
			if early && !r.ready {
				l.rep.EarlyKills++
			}
			werr = nil
		}
	}
	if werr == nil && ee == nil {
		werr = errors.New("exit status 0")
	}
	if werr != nil {
		r.fail("", "the child was not killed: it ended with %v; stderr:\n%s", werr, tail(stderr.String(), 4000))
	}
	if !early && !r.ready {
		r.fail("", "the child never got ready; stderr:\n%s", tail(stderr.String(), 4000))
	}
	for _, bad := range []string{"DATA RACE", "panic:", "fatal error:"} {
		if strings.Contains(stderr.String(), bad) {
			r.fail("", "the child's stderr reports %q:\n%s", bad, tail(stderr.String(), 4000))
			break
		}
	}
	return stderr.String(), nil
}

// sleepCtx sleeps for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// readLines reads r to its end and returns its complete lines (a line the
// kill cut short has no newline and is dropped), closing ready at the
// line "ready" and held at the first "held" line, and counting ack lines
// in acks.
func readLines(r io.Reader, ready, held chan struct{}, acks *atomic.Int64) []string {
	br := bufio.NewReaderSize(r, 64<<10)
	var lines []string
	signalled, wasHeld := false, false
	for {
		s, err := br.ReadString('\n')
		if err != nil {
			if !signalled {
				close(ready)
			}
			if !wasHeld {
				close(held)
			}
			return lines
		}
		if strings.HasPrefix(s, "held ") && !wasHeld {
			close(held)
			wasHeld = true
		}
		s = strings.TrimSuffix(s, "\n")
		lines = append(lines, s)
		if strings.HasPrefix(s, "ack ") {
			acks.Add(1)
		}
		if s == "ready" && !signalled {
			close(ready)
			signalled = true
		}
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// lastTrue is the true time of the round's last clock step, or 0.
func (r *roundLog) lastTrue() int64 {
	for i := len(r.lines) - 1; i >= 0; i-- {
		if r.lines[i].kind == lnClock {
			return r.lines[i].tru
		}
	}
	return 0
}
