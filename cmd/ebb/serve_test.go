package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ebbdb/ebb/cmd/ebb/internal/gateway"
)

// lineWriter collects a command's output and hands out its lines.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	lines chan string
	part  string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 100)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.part += string(p)
	for {
		i := strings.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		select {
		case w.lines <- w.part[:i]:
		default:
		}
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startServe runs `ebb serve args...` in this process and waits for its
// endpoint line. It returns the endpoint, the output, and a channel with
// the exit code.
func startServe(t *testing.T, ctx context.Context, args ...string) (string, *lineWriter, <-chan int, time.Duration) {
	t.Helper()
	out, errOut := newLineWriter(), newLineWriter()
	exit := make(chan int, 1)
	start := time.Now()
	go func() {
		root := newRootCmd()
		root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
		root.SetOut(out)
		root.SetErr(errOut)
		if err := root.ExecuteContext(ctx); err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				exit <- ee.code
				return
			}
			exit <- exitUsage
			return
		}
		exit <- exitOK
	}()
	select {
	case line := <-out.lines:
		took := time.Since(start)
		ep, ok := strings.CutPrefix(line, "ebb serve: listening on ")
		if !ok {
			t.Fatalf("first line %q", line)
		}
		return ep, out, exit, took
	case code := <-exit:
		t.Fatalf("serve exited %d: %s %s", code, out.String(), errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("no endpoint line within a minute")
	}
	return "", nil, nil, 0
}

// signedRequest builds a request signed with the emulator's key.
func signedRequest(t *testing.T, method, url, typ, addr string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(gateway.EmulatorKey)
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", gateway.Sign(key, method, typ, addr, date))
	return req
}

// TestServe: ebb serve prints its endpoint, serves over TLS with a
// certificate it hands out for localhost and 127.0.0.1, and on SIGTERM
// lets a request in flight finish, closes the databases and exits 0.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	inHandler := make(chan struct{}, 1)
	testHookHandler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/docs") {
				inHandler <- struct{}{}
			}
			h.ServeHTTP(w, r)
		})
	}
	defer func() { testHookHandler = nil }()
	ep, out, exit, took := startServe(t, context.Background(), "--dir", dir)
	t.Logf("ready in %v", took)
	if !strings.HasPrefix(ep, "https://127.0.0.1:") || !strings.HasSuffix(ep, "/") {
		t.Fatalf("endpoint %q", ep)
	}
	// The certificate, fetched as from the emulator, verifies the server.
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	res, err := insecure.Get(ep + "_explorer/emulator.pem")
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := io.ReadAll(res.Body)
	res.Body.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatalf("not a PEM certificate: %q", pemBytes)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	for _, host := range []string{ep, strings.Replace(ep, "127.0.0.1", "localhost", 1)} {
		res, err := client.Do(signedRequest(t, "GET", host, "", "", nil))
		if err != nil {
			t.Fatalf("GET %s: %v", host, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), `"databaseAccountEndpoint":"`+ep+`"`) {
			t.Fatalf("account from %s: %d %s", host, res.StatusCode, b)
		}
	}
	do := func(req *http.Request, want int) {
		t.Helper()
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, res.StatusCode, b)
		}
	}
	do(signedRequest(t, "GET", ep+"dbs", "dbs", "", nil), 200)
	do(signedRequest(t, "POST", ep+"dbs", "dbs", "", strings.NewReader(`{"id":"d"}`)), 201)
	do(signedRequest(t, "POST", ep+"dbs/d/colls", "colls", "dbs/d", strings.NewReader(`{"id":"c"}`)), 201)

	// A request whose body is still coming when SIGTERM arrives finishes.
	pr, pw := io.Pipe()
	req := signedRequest(t, "POST", ep+"dbs/d/colls/c/docs", "docs", "dbs/d/colls/c", pr)
	inflight := make(chan int, 1)
	go func() {
		res, err := client.Do(req)
		if err != nil {
			t.Logf("the request in flight: %v", err)
			inflight <- -1
			return
		}
		res.Body.Close()
		inflight <- res.StatusCode
	}()
	pw.Write([]byte(`{"id":"late",`))
	<-inHandler // the server is handling the request
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("send SIGTERM: %v", err)
	}
	// Once the listener is closed the shutdown is under way.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(ep, "https://"), "/"))
		if err != nil {
			break
		}
		c.Close()
	}
	pw.Write([]byte(`"v":1}`))
	pw.Close()
	if code := <-inflight; code != http.StatusCreated {
		t.Errorf("the request in flight got %d", code)
	}
	select {
	case code := <-exit:
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute of SIGTERM")
	}
	if !strings.Contains(out.String(), "ebb serve: stopped; databases closed") {
		t.Errorf("output: %s", out.String())
	}
	// The databases are closed (a new gateway can open the directory) and
	// hold what was written.
	gw, err := gateway.New(gateway.Config{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after stop: %v", err)
	}
	defer gw.Close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("data dir holds %v", ents)
	}
}

// TestServeTempDir: without --dir the data goes to a temporary directory
// removed at exit; --tls-cert without --tls-key is a usage error.
func TestServeTempDir(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, out, exit, _ := startServe(t, ctx)
	var data string
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "data:"); ok {
			data, _, _ = strings.Cut(strings.TrimSpace(v), " ")
		}
	}
	if data == "" {
		// The data line may come just after the endpoint line.
		time.Sleep(100 * time.Millisecond)
		for _, l := range strings.Split(out.String(), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "data:"); ok {
				data, _, _ = strings.Cut(strings.TrimSpace(v), " ")
			}
		}
	}
	if _, err := os.Stat(data); err != nil || !filepath.IsAbs(data) {
		t.Fatalf("temporary data dir %q: %v", data, err)
	}
	cancel()
	if code := <-exit; code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary data dir left behind: %v", err)
	}

	for _, c := range []struct{ args, want string }{
		{"--tls-cert x.pem", "--tls-key"},
		{"--master-key not-base64!", "--master-key is not a base64 key"},
	} {
		var stdout, stderr strings.Builder
		if code := run(append([]string{"serve"}, strings.Fields(c.args)...), &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q", c.args, code, stderr.String())
		}
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"serve", "--addr", "nowhere"}, &stdout, &stderr); code != exitFailed || !strings.Contains(stderr.String(), "nowhere") {
		t.Errorf("--addr nowhere: exit %d, stderr %q", code, stderr.String())
	}
}
