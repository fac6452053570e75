// Command strata runs strata's memory as a service. Its one command,
// serve, owns one store (an embedded directory or a server URL, the
// targets memctl takes) and serves it over HTTP/JSON and MCP:
//
//	strata serve --store .strata/data --key-file keys.json              # HTTP API and MCP at http://127.0.0.1:7411
//	STRATA_API_KEY=... strata serve --store .strata/data --stdio --key-file keys.json   # MCP over stdio
//
// See the server package for the routes, the tools and the key file.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/server"
)

// Environment variables serve reads.
const (
	EnvStore   = "STRATA_STORE"    // the store, when --store is not given
	EnvKeyFile = "STRATA_KEY_FILE" // the key file, when --key-file is not given
	EnvAPIKey  = "STRATA_API_KEY"  // the key of the stdio client (kept out of the process list)
)

// DefaultAddr is where serve listens: this machine only. Give --addr to
// serve others, with keys.
const DefaultAddr = "127.0.0.1:7411"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main with its streams, returning the exit code: 0 ok, 1 error,
// 2 usage.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "strata",
		Short:         "strata's memory as a service",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(serveCmd(stderr))
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "strata:", err)
		if errors.Is(err, errUsage) || strings.Contains(err.Error(), "unknown flag") || strings.Contains(err.Error(), "unknown command") {
			return 2
		}
		return 1
	}
	return 0
}

var errUsage = errors.New("usage")

type serveFlags struct {
	store, state, addr, keyFile, embedder, logLevel string
	tlsCert, tlsKey                                 string
	keys                                            []string
	stdio, anonymous                                bool
	maxBody                                         int64
	rate                                            float64
	burst                                           int
	openTimeout, shutdownTimeout                    time.Duration
}

func serveCmd(stderr io.Writer) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve one store over HTTP/JSON and MCP (streamable HTTP, or stdio)",
		Long: `Open one store and serve it: the HTTP API under /v1/, MCP over streamable
HTTP at /mcp, /healthz and /metrics (Prometheus) on --addr; or, with --stdio,
MCP over stdin and stdout for the key in $` + EnvAPIKey + `.

Every request needs an API key bound to the resources it may use (a key file,
or --key NAME:SECRET=RESOURCE[,RESOURCE]; "*" for every resource). SIGINT and
SIGTERM stop accepting requests, let those under way finish (at most
--shutdown-timeout) and close the store: a write that was acknowledged is in it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), &f, stderr) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.store, "store", "", "store: a directory or a postgres://, qdrant://, chromem:// URL (default $"+EnvStore+", else ./.strata/data)")
	fs.StringVar(&f.state, "state", "", "state store URL when the store keeps none (qdrant://, chromem://)")
	fs.StringVar(&f.addr, "addr", DefaultAddr, "HTTP listen address (port 0: any free port, printed at start)")
	fs.BoolVar(&f.stdio, "stdio", false, "serve MCP over stdin/stdout for the key in $"+EnvAPIKey+" instead of HTTP")
	fs.StringVar(&f.keyFile, "key-file", "", "JSON key file (default $"+EnvKeyFile+")")
	fs.StringArrayVar(&f.keys, "key", nil, "an API key NAME:SECRET=RESOURCE[,RESOURCE...] (repeatable; visible in the process list: prefer --key-file)")
	fs.BoolVar(&f.anonymous, "allow-anonymous", false, "serve requests without a key as an admin (local use only)")
	fs.StringVar(&f.embedder, "embedder", "", "embedder of a new store (uselite, hash:DIM, openai:MODEL, ollama:MODEL); default the recorded one")
	fs.Int64Var(&f.maxBody, "max-body", 0, "largest request body in bytes (0: 1 MiB, negative: none)")
	fs.Float64Var(&f.rate, "rate", 0, "requests per second per key (0: 50, negative: no limit)")
	fs.IntVar(&f.burst, "burst", 0, "requests a key may send at once (0: 100)")
	fs.DurationVar(&f.openTimeout, "open-timeout", 30*time.Second, "how long opening the store may take")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long requests under way may take to finish at shutdown")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the certificate's private key (PEM)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func serve(ctx context.Context, f *serveFlags, stderr io.Writer) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level: %v", errUsage, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	keys, err := loadKeys(f)
	if err != nil {
		return err
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}
	if f.anonymous && !f.stdio && !loopback(f.addr) {
		return fmt.Errorf("%w: --allow-anonymous serves only a loopback address (127.0.0.1, [::1], localhost), not %s", errUsage, f.addr)
	}
	target := f.store
	if target == "" {
		target = os.Getenv(EnvStore)
	}
	if target == "" {
		target = ".strata/data"
	}
	sigCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := environment.Options{State: f.state}
	if f.embedder != "" {
		sp, err := embed.ParseSpec(f.embedder)
		if err != nil {
			return fmt.Errorf("%w: --embedder: %v", errUsage, err)
		}
		if opts.Embedder, err = sp.Open(ctx, nil); err != nil {
			return fmt.Errorf("--embedder %s: %w", sp, err)
		}
	}
	octx, cancel := context.WithTimeout(sigCtx, f.openTimeout)
	env, err := environment.Open(octx, target, opts)
	cancel()
	if err != nil {
		return fmt.Errorf("open store %s: %w", target, err)
	}
	srv, err := server.New(env, server.Options{Keys: keys, AllowAnonymous: f.anonymous, MaxBodyBytes: f.maxBody,
		Rate: f.rate, Burst: f.burst, Logger: log})
	if err != nil {
		_ = env.Close()
		return err
	}
	var serveErr error
	if f.stdio {
		log.Info("serving MCP over stdio", "store", env.Target)
		serveErr = srv.ServeStdio(sigCtx, os.Getenv(EnvAPIKey))
	} else {
		serveErr = serveHTTP(sigCtx, srv, f, env.Target, log, stderr)
	}
	// Whatever ended serving, let the operations under way finish before
	// the store closes: a write they acknowledge must be in it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
	defer cancel()
	err = errors.Join(serveErr, srv.Shutdown(sctx), env.Close())
	if err == nil {
		log.Info("stopped; store closed", "store", env.Target)
	}
	return err
}

func serveHTTP(ctx context.Context, srv *server.Server, f *serveFlags, target string, log *slog.Logger, stderr io.Writer) error {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	scheme := "http"
	if f.tlsCert != "" {
		scheme = "https"
	}
	// The first line on stderr says where: tests and scripts that ask for
	// port 0 read it.
	fmt.Fprintf(stderr, "strata: serving %s on %s://%s (MCP at /mcp)\n", target, scheme, ln.Addr())
	errc := make(chan error, 1)
	go func() {
		if f.tlsCert != "" {
			errc <- hs.ServeTLS(ln, f.tlsCert, f.tlsKey)
			return
		}
		errc <- hs.Serve(ln)
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests under way", "timeout", f.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func loadKeys(f *serveFlags) (*server.Keyring, error) {
	path := f.keyFile
	if path == "" {
		path = os.Getenv(EnvKeyFile)
	}
	var keys []server.Key
	if path != "" {
		ks, err := server.ReadKeyFile(path)
		if err != nil {
			return nil, err
		}
		keys = ks
	}
	for _, s := range f.keys {
		k, err := server.ParseKeyFlag(s)
		if err != nil {
			return nil, fmt.Errorf("%w: --key: %w", errUsage, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 && !f.anonymous {
		return nil, fmt.Errorf("%w: no API keys: give --key-file (or $%s) or --key, or --allow-anonymous for local use", errUsage, EnvKeyFile)
	}
	return server.NewKeyring(keys...)
}

// loopback reports whether addr (host:port) names this machine only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
