package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/stratamem/strata/vectorstore"
)

// APIVersion is the version prefix of the HTTP API's routes.
const APIVersion = "/v1"

type principalKey struct{}

// principalFrom is the principal the auth middleware put in ctx.
func principalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// anonymous is the principal of every request when Options.AllowAnonymous
// is set and the request carries no key.
var anonymous = &Principal{Name: "anonymous", admin: true}

// Handler serves the HTTP API under /v1/, MCP over streamable HTTP at
// /mcp, /healthz and /metrics. See the package documentation for the
// routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h func(w http.ResponseWriter, r *http.Request, p *Principal) (any, error)) {
		mux.Handle(pattern, s.authed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			out, err := h(w, r, principalFrom(r.Context()))
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, out) // writes too: the body says what they did
		})))
	}
	v := APIVersion
	api("GET "+v+"/whoami", func(_ http.ResponseWriter, _ *http.Request, p *Principal) (any, error) { return Who(p), nil })
	api("POST "+v+"/search", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req SearchRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.Search(r.Context(), p, req)
	})
	api("GET "+v+"/memories", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		q := r.URL.Query()
		limit, err := intParam(q.Get("limit"))
		if err != nil {
			return nil, err
		}
		return s.List(r.Context(), p, ListRequest{Resource: q.Get("resource"), Layer: q.Get("layer"), Kind: q.Get("kind"),
			Thread: q.Get("thread"), Limit: limit, PageToken: q.Get("page_token"), Newest: q.Get("order") == "newest",
			Vectors: q.Get("vectors") == "true", Terms: q.Get("terms") == "true"})
	})
	api("POST "+v+"/memories", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req MemoryAdd
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.AddMemory(r.Context(), p, req)
	})
	api("PUT "+v+"/memories/{id}", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req MemoryEdit
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.EditMemory(r.Context(), p, r.PathValue("id"), req)
	})
	api("GET "+v+"/memories/{id}", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		return s.Get(r.Context(), p, r.PathValue("id"))
	})
	api("DELETE "+v+"/memories/{id}", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		m, err := s.Get(r.Context(), p, r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return s.Forget(r.Context(), p, ForgetRequest{Resource: m.Resource, IDs: []string{m.ID}})
	})
	api("POST "+v+"/forget", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req ForgetRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.Forget(r.Context(), p, req)
	})
	api("GET "+v+"/facts", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		q := r.URL.Query()
		var at time.Time
		if a := q.Get("as_of"); a != "" {
			t, err := time.Parse(time.RFC3339Nano, a)
			if err != nil {
				return nil, fmt.Errorf("%w: as_of is not an RFC 3339 time", ErrInvalidRequest)
			}
			at = t
		}
		return s.Facts(r.Context(), p, FactsQuery{Resource: q.Get("resource"), Thread: q.Get("thread"), AsOf: at})
	})
	api("POST "+v+"/facts", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req FactsRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.RecordFacts(r.Context(), p, req)
	})
	api("GET "+v+"/entities", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		q := r.URL.Query()
		return s.Entities(r.Context(), p, EntitiesQuery{Resource: q.Get("resource"), Thread: q.Get("thread")})
	})
	api("POST "+v+"/entities", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req EntitiesRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.UpdateEntities(r.Context(), p, req)
	})
	api("GET "+v+"/scratchpad", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		q := r.URL.Query()
		return s.Scratchpad(r.Context(), p, ScratchpadQuery{Resource: q.Get("resource"), Thread: q.Get("thread"), Key: q.Get("key")})
	})
	api("POST "+v+"/scratchpad", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req ScratchpadUpdate
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.SetScratchpad(r.Context(), p, req)
	})
	api("POST "+v+"/messages", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var req MessagesRequest
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		return s.AddMessages(r.Context(), p, req)
	})
	api("GET "+v+"/stats", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		return s.Stats(r.Context(), p, StatsQuery{Resource: r.URL.Query().Get("resource")})
	})
	stateKey := func(r *http.Request) StateKey {
		q := r.URL.Query()
		return StateKey{Resource: q.Get("resource"), Thread: q.Get("thread"), Global: q.Get("scope") == "global",
			Layer: r.PathValue("layer"), Name: r.PathValue("name")}
	}
	api("GET "+v+"/state", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		k := stateKey(r)
		k.Layer = r.URL.Query().Get("layer")
		return s.ListState(r.Context(), p, k)
	})
	api("GET "+v+"/state/{layer}/{name}", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		return s.getState(r.Context(), p, stateKey(r), r.URL.Query().Get("raw") == "true")
	})
	api("PUT "+v+"/state/{layer}/{name}", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		var body struct {
			Value    json.RawMessage `json:"value"`
			Revision int64           `json:"revision"`
		}
		if err := decode(r, &body); err != nil {
			return nil, err
		}
		return s.PutState(r.Context(), p, StatePut{StateKey: stateKey(r), Value: body.Value, Revision: body.Revision})
	})
	api("DELETE "+v+"/state/{layer}/{name}", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		rev, err := intParam(r.URL.Query().Get("revision"))
		if err != nil {
			return nil, err
		}
		if err := s.DeleteState(r.Context(), p, stateKey(r), int64(rev)); err != nil {
			return nil, err
		}
		return struct {
			Deleted bool `json:"deleted"`
		}{true}, nil
	})
	api("GET "+v+"/assembly", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		q := r.URL.Query()
		turn, err := intParam(q.Get("turn"))
		if err != nil {
			return nil, err
		}
		return s.Assembly(r.Context(), p, AssemblyQuery{Resource: q.Get("resource"), Thread: q.Get("thread"), Turn: turn})
	})
	api("GET "+v+"/assemblies", func(_ http.ResponseWriter, r *http.Request, p *Principal) (any, error) {
		q := r.URL.Query()
		return s.Assemblies(r.Context(), p, AssemblyQuery{Resource: q.Get("resource"), Thread: q.Get("thread")})
	})
	mux.Handle("/mcp", s.authed(s.mcpHTTP()))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", s.prom.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fmt.Errorf("%w: no route %s %s (the API is under %s/)", ErrNotFound, r.Method, r.URL.Path, APIVersion))
	})
	return s.observe(mux)
}

// noRecords selects no record by an id no layer writes: a count over it
// is the cheapest round trip that proves the store answers.
var noRecords = vectorstore.Filter{IDs: []string{"strata-healthz-probe"}}

// healthz answers 200 while the store answers, 503 while it drains or
// when a count fails.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	_, err := op(s, func() (int, error) { return s.mem.Records.Count(ctx, noRecords) })
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": code(Status(err))})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// authed authenticates the request, applies the key's rate and the body
// limit, and puts the principal in the context.
func (s *Server) authed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret := bearer(r)
		var p *Principal
		var err error
		switch {
		case secret == "" && s.opts.AllowAnonymous:
			p = anonymous
		default:
			p, err = s.opts.Keys.Lookup(secret)
		}
		if err != nil {
			// Failed attempts are rate limited per address, so keys
			// cannot be guessed at the speed of the network.
			if lerr := s.limit.allow("addr:" + remoteHost(r)); lerr != nil {
				err = lerr
			}
			s.writeError(w, r, err)
			return
		}
		if err := s.limit.allow("key:" + p.Name); err != nil {
			s.writeError(w, r, err)
			return
		}
		if n := s.maxBody(); n > 0 {
			if r.ContentLength > n {
				s.writeError(w, r, &LimitError{Limit: ErrTooLarge, Max: float64(n)})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
		}
		trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("strata.key.name", p.Name))
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

func (s *Server) maxBody() int64 {
	switch n := s.opts.MaxBodyBytes; {
	case n == 0:
		return DefaultMaxBodyBytes
	case n < 0:
		return 0
	default:
		return n
	}
}

// bearer is the key of a request: Authorization: Bearer KEY, or the
// X-API-Key header.
func bearer(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	return strings.TrimSpace(r.Header.Get("X-API-Key"))
}

func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// decode reads a JSON request body into v, strictly: an unknown field is
// an error, so that a misspelt field is not silently ignored.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &LimitError{Limit: ErrTooLarge, Max: float64(mbe.Limit)}
		}
		return fmt.Errorf("%w: body: %w", ErrInvalidRequest, err)
	}
	return nil
}

func intParam(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrInvalidRequest, s)
	}
	return n, nil
}

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := Status(err)
	if ra := retryAfter(err); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="strata"`)
	}
	var b errorBody
	b.Error.Code = code(status)
	b.Error.Message = err.Error()
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
		if status == http.StatusInternalServerError {
			b.Error.Message = "internal error" // store errors can carry paths and data; the log has it
		}
	} else {
		s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	span := trace.SpanFromContext(r.Context())
	span.SetAttributes(semconv.ErrorTypeKey.String(b.Error.Code))
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the MCP handler stream server-sent events through the
// wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe wraps the whole handler: one server span per request, named by
// method and route, with the HTTP semantic-convention attributes, and the
// request duration metric.
func (s *Server) observe(h http.Handler) http.Handler {
	dur, err := s.prom.Provider.Meter(instrumentationScope).Float64Histogram("http.server.request.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	if err != nil {
		s.log.Warn("no request duration metric", "err", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, span := s.tracer.Start(r.Context(), r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path)))
		sw := &statusWriter{ResponseWriter: w}
		r = r.WithContext(ctx)
		h.ServeHTTP(sw, r)
		route := r.Pattern
		if _, p, ok := strings.Cut(route, " "); ok {
			route = p
		}
		if route == "" || route == "/" {
			route = "unmatched"
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetName(r.Method + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
		if dur != nil {
			dur.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method),
				semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status)))
		}
	})
}

// instrumentationScope is the scope of the server's own instruments.
const instrumentationScope = "github.com/stratamem/strata/server"
