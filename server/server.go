package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/telemetry"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
)

// Options configure a Server. The zero value needs Keys (or
// AllowAnonymous) and gives the default limits, the global tracer
// provider, a Prometheus registry of the server's own and the layers with
// their defaults at resource scope.
type Options struct {
	// Keys authenticate every request but /healthz and /metrics. A server
	// without keys refuses to start unless AllowAnonymous is set.
	Keys *Keyring
	// AllowAnonymous serves requests without a key as an admin (every
	// resource). For a store only this machine's user can reach; never on
	// a shared address.
	AllowAnonymous bool
	// MaxBodyBytes bounds a request body (HTTP and MCP over HTTP); 0 means
	// DefaultMaxBodyBytes, negative means none.
	MaxBodyBytes int64
	// Rate and Burst bound each key's requests (per second, at once); 0
	// means DefaultRate and DefaultBurst, a negative Rate means no limit.
	Rate  float64
	Burst int
	// TracerProvider gets the server's spans (requests, tool calls,
	// embedding calls, vector queries, memory writes); nil means
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Telemetry says how ids and error texts reach spans and metrics
	// (telemetry.Options: ids omitted by default).
	Telemetry telemetry.Options
	// Prometheus is where the metrics go and /metrics reads; nil makes one
	// for the server.
	Prometheus *telemetry.Prometheus
	// Logger logs refused requests and failures; nil logs nothing.
	Logger *slog.Logger
	// Layers configure the layers the server writes through. Their scope
	// defaults to core.ScopeResource (the scope the agent's layers must
	// use for the server to see the same records); set it to
	// core.ScopeThread for layers an agent keeps per thread, and requests
	// must then name a thread. The scratchpad is served at both scopes:
	// a request with a thread reads and writes the thread's notes, one
	// without the resource's.
	Layers LayerOptions
}

// LayerOptions are the options of the layers a Server writes through; see
// Options.Layers.
type LayerOptions struct {
	Semantic   semantic.Options
	Entity     entity.Options
	Temporal   temporal.Options
	Scratchpad scratchpad.Options
}

// Server serves one store: the operations of the HTTP API and the MCP
// tools, each checked against the caller's key. Make it with New, serve
// Handler (HTTP and MCP over HTTP) or ServeStdio (MCP over stdio), and
// call Shutdown before closing the store.
type Server struct {
	env     *environment.Env
	mem     *memory.Store
	state   storage.Store
	opts    Options
	log     *slog.Logger
	tracer  trace.Tracer
	metrics *telemetry.Metrics
	prom    *telemetry.Prometheus
	limit   *limiter

	recall *semantic.Layer
	ents   *entity.Layer
	facts  *temporal.Layer
	padRes *scratchpad.Layer
	padThr *scratchpad.Layer

	mu         sync.Mutex
	draining   bool
	mcpServers map[*Principal]*mcp.Server
	inflight   sync.WaitGroup
}

// ErrInvalidOptions is wrapped by New for options it cannot use.
var ErrInvalidOptions = errors.New("server: invalid options")

// New returns a server over env, which the caller keeps owning: call
// Shutdown, then close env. The server writes through its own handle on
// env's records, traced and counted (embedding calls, vector queries,
// writes), and through env's state store.
func New(env *environment.Env, opts Options) (*Server, error) {
	if env == nil || env.Memory == nil {
		return nil, fmt.Errorf("%w: no environment", ErrInvalidOptions)
	}
	if opts.Keys.Len() == 0 && !opts.AllowAnonymous {
		return nil, fmt.Errorf("%w: no API keys (give a key file or keys, or allow anonymous access for local use)", ErrInvalidOptions)
	}
	s := &Server{env: env, state: env.State, opts: opts, log: opts.Logger, limit: newLimiter(opts.Rate, opts.Burst),
		mcpServers: map[*Principal]*mcp.Server{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	tr, err := telemetry.New(tp, opts.Telemetry)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	s.tracer = tp.Tracer(telemetry.ScopeName)
	if s.prom = opts.Prometheus; s.prom == nil {
		if s.prom, err = telemetry.NewPrometheus(); err != nil {
			return nil, err
		}
	}
	if s.metrics, err = telemetry.NewMetrics(s.prom.Provider, opts.Telemetry); err != nil {
		return nil, err
	}
	in := telemetry.Instruments{Tracer: tr, Metrics: s.metrics}
	records, err := tracedRecords(env.Memory.Records, in)
	if err != nil {
		return nil, err
	}
	s.mem = &memory.Store{Records: records, Embedder: telemetry.Embedder(env.Memory.Embedder, in), Now: env.Memory.Now}
	if err := s.openLayers(opts.Layers); err != nil {
		return nil, err
	}
	return s, nil
}

// tracedRecords is a handle on the records of col whose driver is wrapped
// by telemetry.Driver. Both handles share the one driver, which the
// environment closes with col.
func tracedRecords(col *vectorstore.Collection, in telemetry.Instruments) (*vectorstore.Collection, error) {
	out, err := col.WithDriver(func(d driver.Collection) driver.Collection { return telemetry.Driver(d, in) })
	if err != nil {
		return nil, fmt.Errorf("server: trace the records: %w", err)
	}
	return out, nil
}

func (s *Server) openLayers(lo LayerOptions) error {
	resource := func(c *memory.Common) {
		if c.Scope == "" {
			c.Scope = core.ScopeResource
		}
	}
	resource(&lo.Semantic.Common)
	resource(&lo.Entity.Common)
	resource(&lo.Temporal.Common)
	var err error
	if s.recall, err = semantic.New(s.mem, lo.Semantic); err != nil {
		return fmt.Errorf("%w: semantic layer: %w", ErrInvalidOptions, err)
	}
	if s.ents, err = entity.New(s.mem, lo.Entity); err != nil {
		return fmt.Errorf("%w: entity layer: %w", ErrInvalidOptions, err)
	}
	if s.facts, err = temporal.New(s.mem, lo.Temporal); err != nil {
		return fmt.Errorf("%w: temporal layer: %w", ErrInvalidOptions, err)
	}
	pr, pt := lo.Scratchpad, lo.Scratchpad
	pr.Scope, pt.Scope = core.ScopeResource, core.ScopeThread
	if s.padRes, err = scratchpad.New(s.mem, pr); err != nil {
		return fmt.Errorf("%w: scratchpad layer: %w", ErrInvalidOptions, err)
	}
	if s.padThr, err = scratchpad.New(s.mem, pt); err != nil {
		return fmt.Errorf("%w: scratchpad layer: %w", ErrInvalidOptions, err)
	}
	return nil
}

// Metrics are the server's metrics, for a host that also runs agents in
// the process and feeds their usage (Metrics.RecordUsage).
func (s *Server) Metrics() *telemetry.Metrics { return s.metrics }

// enter admits one operation unless the server drains; leave ends it.
func (s *Server) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return fmt.Errorf("%w: the store is closing", ErrShuttingDown)
	}
	s.inflight.Add(1)
	return nil
}

func (s *Server) leave() { s.inflight.Done() }

// Shutdown refuses new operations (ErrShuttingDown) and waits until those
// under way have finished, so that every write the server acknowledged is
// in the store when the caller closes it. It returns ctx's error when ctx
// ends first (the operations still running may or may not complete).
// Stop the transports first (http.Server.Shutdown) so that no client
// waits on a refused request.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("server: shutdown: operations still running: %w", ctx.Err())
	}
	if s.opts.Prometheus == nil {
		_ = s.prom.Shutdown(ctx)
	}
	return nil
}
