package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ebbdb/ebb/cmd/ebb/internal/gateway"
	"github.com/ebbdb/ebb/engine"
	"github.com/spf13/cobra"
)

// certPath is where ebb serve hands out its certificate, as the Cosmos DB
// emulator does, without authentication.
const certPath = "/_explorer/emulator.pem"

// testHookHandler, when set (by tests), wraps the server's handler.
var testHookHandler func(http.Handler) http.Handler

// blockCachePerDatabase bounds each database's block cache: every Cosmos
// database is an engine.DB with a cache of its own, and the engine's
// default (an eighth of the machine's memory) is for one database per
// process.
const blockCachePerDatabase = 64 << 20

// shutdownGrace bounds how long in-flight requests may take to finish
// after SIGINT or SIGTERM.
const shutdownGrace = 30 * time.Second

func newServeCmd() *cobra.Command {
	var addr, dir, key, certFile, keyFile string
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8081] [--dir DIR] [--master-key KEY]",
		Short: "Serve the Azure Cosmos DB NoSQL REST API over ebb (an emulator)",
		Long: `Serve answers the Azure Cosmos DB NoSQL REST API over HTTPS, so that the
Cosmos DB SDKs and tools work against ebb as against the Cosmos DB emulator:
databases, containers (one partition key path, defaultTtl, indexing policy),
items (create, upsert, read, replace, delete, patch), queries with pages,
transactional batches and the change feed.

Requests are signed with the master key (default: the emulator's
well-known key). The certificate is made at start, self-signed for
localhost and 127.0.0.1, unless --tls-cert and --tls-key give one; clients
can fetch it from https://ADDR` + certPath + `. Data is kept in --dir, one
ebb database per Cosmos database; without --dir it goes to a fresh
temporary directory that is removed at exit.

It prints "ebb serve: listening on https://ADDR/" once it accepts
connections, and on SIGINT or SIGTERM lets requests in flight finish,
closes the databases and exits 0.`,
		Example: `  ebb serve
  ebb serve --addr 127.0.0.1:8081 --dir /var/lib/ebb-cosmos
  curl -k https://127.0.0.1:8081` + certPath + ` > emulator.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cmd, serveConfig{addr: addr, dir: dir, key: key, certFile: certFile, keyFile: keyFile})
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8081", "the address to listen on")
	f.StringVar(&dir, "dir", "", "the data directory (default: a temporary directory removed at exit)")
	f.StringVar(&key, "master-key", gateway.EmulatorKey, "the base64 master key requests are signed with")
	f.StringVar(&certFile, "tls-cert", "", "a PEM certificate to serve (with --tls-key) instead of a self-signed one")
	f.StringVar(&keyFile, "tls-key", "", "the PEM private key of --tls-cert")
	return cmd
}

type serveConfig struct {
	addr, dir, key, certFile, keyFile string
}

// serve runs the server until ctx ends.
func serve(ctx context.Context, cmd *cobra.Command, c serveConfig) error {
	out := cmd.OutOrStdout()
	if (c.certFile == "") != (c.keyFile == "") {
		return usageError(errors.New("serve: --tls-cert and --tls-key go together"))
	}
	if k, err := base64.StdEncoding.DecodeString(c.key); err != nil || len(k) == 0 {
		return usageError(fmt.Errorf("serve: --master-key is not a base64 key (%v)", err))
	}
	var cert tls.Certificate
	var certPEM []byte
	var err error
	if c.certFile != "" {
		cert, err = tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err == nil {
			certPEM, err = os.ReadFile(c.certFile)
		}
	} else {
		cert, certPEM, err = gateway.SelfSigned("localhost", "127.0.0.1", "::1")
	}
	if err != nil {
		return failed(fmt.Errorf("serve: certificate: %w", err))
	}
	dir, temp := c.dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ebb-serve-"); err != nil {
			return failed(fmt.Errorf("serve: %w", err))
		}
		temp = true
		defer os.RemoveAll(dir)
	}
	gw, err := gateway.New(gateway.Config{Dir: dir, MasterKey: c.key, Engine: &engine.Options{BlockCacheSize: blockCachePerDatabase}})
	if err != nil {
		return failed(fmt.Errorf("serve: %w", err))
	}
	defer gw.Close()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return failed(fmt.Errorf("serve: %w", err))
	}
	endpoint := "https://" + advertised(ln.Addr().(*net.TCPAddr)) + "/"
	gw.SetEndpoint(endpoint)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+certPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(certPEM)
	})
	mux.Handle("/", gw)
	var handler http.Handler = mux
	if testHookHandler != nil {
		handler = testHookHandler(handler)
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(cmd.ErrOrStderr(), "ebb serve: ", 0),
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	where := dir
	if temp {
		where += " (temporary, removed at exit)"
	}
	fmt.Fprintf(out, "ebb serve: listening on %s\n", endpoint)
	fmt.Fprintf(out, "  data:        %s\n", where)
	if c.key == gateway.EmulatorKey {
		fmt.Fprintf(out, "  master key:  the Cosmos DB emulator's well-known key\n")
	}
	fmt.Fprintf(out, "  certificate: %s%s\n", strings.TrimSuffix(endpoint, "/"), certPath)
	select {
	case err := <-done:
		return failed(fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	serr := srv.Shutdown(sctx)
	cerr := gw.Close()
	if err := errors.Join(serr, cerr); err != nil {
		return failed(fmt.Errorf("serve: shutting down: %w", err))
	}
	fmt.Fprintln(out, "ebb serve: stopped; databases closed")
	return nil
}

// advertised is the host:port the account metadata names: the address
// listened on, with localhost for an unspecified one.
func advertised(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP == nil || a.IP.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, fmt.Sprint(a.Port))
}
