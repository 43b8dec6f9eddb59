package sdktest

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// emulatorKey is the Cosmos DB emulator's well-known master key, which
// `ebb serve` accepts by default.
const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// repoRoot is the ebb repository's root, relative to this module.
const repoRoot = "../../.."

var (
	buildOnce sync.Once
	buildBin  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// ebbBinary returns the ebb binary under test: $EBB_BIN if set, else one
// built once from this repository.
func ebbBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("EBB_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatalf("EBB_BIN=%s: %v", p, err)
		}
		return abs
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "ebb-sdktest-bin")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "ebb")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/ebbdb/ebb/cmd/ebb")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build of github.com/ebbdb/ebb/cmd/ebb in %s: %v\n%s", repoRoot, err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building ebb: %v", buildErr)
	}
	return buildBin
}

// server is one running `ebb serve` process.
type server struct {
	// Endpoint is the URL the server printed once it accepted connections.
	Endpoint string
	// Dir is its data directory.
	Dir string

	cmd     *exec.Cmd
	out     *lockedBuffer
	done    chan error // receives Wait's result once the process exits
	stopped bool       // stop has run
}

// lockedBuffer collects a process's output for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line)
	l.b.WriteByte('\n')
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var endpointRE = regexp.MustCompile(`https://[^\s"'<>]+`)

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer starts `ebb serve` on a free loopback port with a fresh data
// directory, waits until it prints its endpoint, and stops it with SIGINT
// when the test ends, failing the test unless it exits cleanly.
func startServer(t testing.TB, extraArgs ...string) *server {
	t.Helper()
	s := launch(t, t.TempDir(), extraArgs...)
	t.Cleanup(func() { s.stop(t, syscall.SIGINT) })
	return s
}

// launch starts `ebb serve --dir dir` on a free loopback port and waits
// until it prints its endpoint; the caller stops it. A port taken by
// someone else between freePort and the server's bind is retried.
func launch(t testing.TB, dir string, extraArgs ...string) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, err := launchOnce(t, dir, extraArgs...)
		if err == nil {
			// A test that fails before stopping the server must not leave it behind.
			t.Cleanup(func() {
				if !s.stopped {
					s.cmd.Process.Kill()
					<-s.done
				}
			})
			return s
		}
		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			t.Logf("retrying on another port: %v", err)
			continue
		}
		t.Fatal(err)
	}
}

// launchOnce is one attempt of launch.
func launchOnce(t testing.TB, dir string, extraArgs ...string) (*server, error) {
	t.Helper()
	bin := ebbBinary(t)
	s := &server{Dir: dir, out: &lockedBuffer{}, done: make(chan error, 1)}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := append([]string{"serve", "--addr", addr, "--dir", s.Dir}, extraArgs...)
	s.cmd = exec.Command(bin, args...)
	pr, pw := io.Pipe()
	s.cmd.Stdout = pw
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s %s: %w", bin, strings.Join(args, " "), err)
	}
	go func() {
		err := s.cmd.Wait()
		pw.Close()
		s.done <- err
	}()
	endpoint := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			s.out.add(line)
			if !sent {
				if m := endpointRE.FindString(line); m != "" {
					endpoint <- m
					sent = true
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case ep := <-endpoint:
		if !strings.HasSuffix(ep, "/") {
			ep += "/"
		}
		s.Endpoint = ep
		return s, nil
	case err := <-s.done:
		<-scanned // all of its output
		return nil, fmt.Errorf("ebb serve --addr %s exited before printing its endpoint (%v); output:\n%s", addr, err, s.out)
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		return nil, fmt.Errorf("ebb serve --addr %s printed no endpoint within 60s; output:\n%s", addr, s.out)
	}
}

// stop sends sig and waits for the process; a non-zero exit fails the test
// (the issue asks for a clean shutdown on SIGINT and SIGTERM).
func (s *server) stop(t testing.TB, sig os.Signal) {
	t.Helper()
	s.stopped = true
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("signalling ebb serve: %v", err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("ebb serve did not exit cleanly on %v: %v; output:\n%s", sig, err, s.out)
		}
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		t.Errorf("ebb serve did not exit within 60s of %v; output:\n%s", sig, s.out)
	}
}

// client returns a Go SDK client for the server, configured as the SDK's own
// emulator tests configure theirs: the well-known key and no certificate
// verification (the server's certificate is self-signed).
func (s *server) client(t testing.TB) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatalf("key credential: %v", err)
	}
	transport := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	c, err := azcosmos.NewClientWithKey(s.Endpoint, cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Transport: transport,
			// Fail fast: a retried request would hide a server error.
			Retry: policy.RetryOptions{MaxRetries: -1},
		},
	})
	if err != nil {
		t.Fatalf("azcosmos client for %s: %v", s.Endpoint, err)
	}
	return c
}

// newDatabase creates a database and returns its client.
func newDatabase(t testing.TB, c *azcosmos.Client, id string) *azcosmos.DatabaseClient {
	t.Helper()
	if _, err := c.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: id}, nil); err != nil {
		t.Fatalf("create database %s: %v", id, err)
	}
	db, err := c.NewDatabase(id)
	if err != nil {
		t.Fatalf("database client %s: %v", id, err)
	}
	return db
}

// newContainer creates a container partitioned on pkPath with the given
// defaultTtl (nil: TTL off) and returns its client.
func newContainer(t testing.TB, db *azcosmos.DatabaseClient, id, pkPath string, defaultTTL *int32) *azcosmos.ContainerClient {
	t.Helper()
	props := azcosmos.ContainerProperties{
		ID:                     id,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{pkPath}},
		DefaultTimeToLive:      defaultTTL,
	}
	if _, err := db.CreateContainer(context.Background(), props, nil); err != nil {
		t.Fatalf("create container %s: %v", id, err)
	}
	c, err := db.NewContainer(id)
	if err != nil {
		t.Fatalf("container client %s: %v", id, err)
	}
	return c
}

// statusOf returns the HTTP status of an SDK error, or 0 when err is not a
// service response.
func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// wantStatus fails the test unless err is a service error with status want.
func wantStatus(t testing.TB, what string, err error, want int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want HTTP %d", what, want)
	}
	if got := statusOf(err); got != want {
		t.Fatalf("%s: got %v, want HTTP %d", what, err, want)
	}
}

func ptr[T any](v T) *T { return &v }
