package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Implementation is how the MCP server introduces itself.
var Implementation = &mcp.Implementation{Name: "strata", Title: "strata memory", Version: "v1"}

// Tool names of the MCP server.
const (
	ToolSearch         = "search_memories"
	ToolList           = "list_memories"
	ToolForget         = "forget_memories"
	ToolRecordFacts    = "record_facts"
	ToolListFacts      = "list_facts"
	ToolUpdateEntities = "update_entities"
	ToolListEntities   = "list_entities"
	ToolReadScratchpad = "read_scratchpad"
	ToolSetScratchpad  = "set_scratchpad"
)

// instructions tell the model what the tools are for.
const instructions = `Long-term memory of the users you work for, kept by strata. ` +
	`Every tool works on one resource (a user): pass "resource", or leave it out when your key is bound to one. ` +
	`search_memories finds what was remembered by meaning; record_facts keeps dated facts (a newer fact about the ` +
	`same subject and predicate closes the older one); update_entities keeps people, organisations and places with notes; ` +
	`read_scratchpad and set_scratchpad hold working notes; list_memories and forget_memories manage what is stored.`

// mcpFor returns the MCP server of a principal: its tools are bound to
// it, so a call can never act for another key. stdio marks the server
// of the stdio transport, whose calls the HTTP middleware does not see:
// its tools apply the key's rate themselves.
func (s *Server) mcpFor(p *Principal, stdio bool) *mcp.Server {
	if !stdio {
		s.mu.Lock()
		defer s.mu.Unlock()
		if srv, ok := s.mcpServers[p]; ok {
			return srv
		}
	}
	srv := mcp.NewServer(Implementation, &mcp.ServerOptions{Instructions: instructions, Logger: s.log})
	t := toolCtx{s: s, p: p, stdio: stdio}
	addTool(t, srv, &mcp.Tool{Name: ToolSearch, Title: "Search memories",
		Description: "Find the resource's memories nearest in meaning to a query (facts, entities, past messages, notes), best first, with their similarity.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.Search)
	addTool(t, srv, &mcp.Tool{Name: ToolList, Title: "List memories",
		Description: "List the resource's stored memories, oldest first (or newest with newest: true), optionally of one layer, kind or thread; page with page_token.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.List)
	addTool(t, srv, &mcp.Tool{Name: ToolForget, Title: "Forget memories",
		Description: "Delete memories of the resource by id (from search or list), or everything about it with all: true.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, s.Forget)
	addTool(t, srv, &mcp.Tool{Name: ToolRecordFacts, Title: "Record facts",
		Description: `Record dated facts about the resource, e.g. {"subject":"user","predicate":"lives in","value":"Lisbon","when":"yesterday"}. ` +
			"A newer fact with the same subject and predicate ends the validity of the older one."}, s.RecordFacts)
	addTool(t, srv, &mcp.Tool{Name: ToolListFacts, Title: "List facts",
		Description: "List the resource's facts, or only those that held at as_of.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.Facts)
	addTool(t, srv, &mcp.Tool{Name: ToolUpdateEntities, Title: "Update entities",
		Description: "Add or update people, organisations, places and concepts of the resource, merged by name and type; notes are added to the entity's."}, s.UpdateEntities)
	addTool(t, srv, &mcp.Tool{Name: ToolListEntities, Title: "List entities",
		Description: "List the resource's entities with their notes.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.Entities)
	addTool(t, srv, &mcp.Tool{Name: ToolReadScratchpad, Title: "Read scratchpad",
		Description: "Read scratchpad entries: the resource's, or a thread's with thread; one entry with key.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, s.Scratchpad)
	addTool(t, srv, &mcp.Tool{Name: ToolSetScratchpad, Title: "Set scratchpad",
		Description: "Set (set: {key: value}) and delete (delete: [key]) scratchpad entries of the resource, or of a thread with thread."}, s.SetScratchpad)
	if !stdio {
		s.mcpServers[p] = srv
	}
	return srv
}

func ptr[T any](v T) *T { return &v }

// toolCtx is what every tool handler of one MCP server shares.
type toolCtx struct {
	s     *Server
	p     *Principal
	stdio bool
}

// addTool adds an operation as a tool: traced, rate limited on stdio, its
// error returned to the model as a tool error (the SDK sets IsError).
func addTool[In, Out any](t toolCtx, srv *mcp.Server, tool *mcp.Tool, run func(context.Context, *Principal, In) (Out, error)) {
	mcp.AddTool(srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		ctx, span := t.s.tracer.Start(ctx, "execute_tool "+tool.Name, trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tool.Name),
				semconv.McpMethodNameToolsCall, attribute.String("strata.key.name", t.p.Name)))
		defer span.End()
		var zero Out
		if t.stdio {
			if err := t.s.limit.allow("key:" + t.p.Name); err != nil {
				span.SetStatus(codes.Error, "rate limited")
				return nil, zero, err
			}
		}
		out, err := run(ctx, t.p, in)
		if err != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String(code(Status(err))))
			span.SetStatus(codes.Error, code(Status(err)))
			if Status(err) == http.StatusInternalServerError {
				t.s.log.Error("tool failed", "tool", tool.Name, "key", t.p.Name, "err", err)
				err = errors.New("internal error") // store errors can carry paths and data; the log has it
			}
			return nil, zero, err
		}
		return nil, out, nil
	})
}

// mcpHTTP is the streamable HTTP handler of /mcp. It runs stateless: each
// POST is a whole exchange and no session outlives it, so any server
// process behind a load balancer can answer, and shutdown waits only for
// requests under way, never for an idle event stream.
func (s *Server) mcpHTTP() http.Handler {
	max := s.maxBody()
	if max == 0 {
		max = -1 // the SDK's "no limit"
	}
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		p := principalFrom(r.Context())
		if p == nil {
			return nil
		}
		return s.mcpFor(p, false)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log, MaxRequestBodyBytes: max})
}

// ServeStdio serves MCP over stdin and stdout for the key secret (an
// admin's with Options.AllowAnonymous and no secret) until the client
// closes stdin or ctx ends. Tool calls under way when ctx ends are not
// cut short by it: call Shutdown after ServeStdio returns to wait for
// them before closing the store.
func (s *Server) ServeStdio(ctx context.Context, secret string) error {
	return s.ServeMCP(ctx, secret, &mcp.StdioTransport{MaxLineLength: int(max(s.maxBody(), 0))})
}

// ServeMCP serves MCP over any transport (ServeStdio's, or an in-memory
// one in tests) for the key secret.
func (s *Server) ServeMCP(ctx context.Context, secret string, t mcp.Transport) error {
	var p *Principal
	var err error
	if secret == "" && s.opts.AllowAnonymous {
		p = anonymous
	} else if p, err = s.opts.Keys.Lookup(secret); err != nil {
		return fmt.Errorf("server: mcp: %w", err)
	}
	return s.mcpFor(p, true).Run(context.WithoutCancel(ctx), &cancelOn{Transport: t, ctx: ctx})
}

// cancelOn is a transport whose connection closes when ctx ends, so that
// Run returns then, while the handlers' contexts (WithoutCancel) let tool
// calls under way finish their writes.
type cancelOn struct {
	mcp.Transport
	ctx context.Context
}

func (c *cancelOn) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(c.ctx, func() { _ = conn.Close() })
	return &stopConn{Connection: conn, stop: stop}, nil
}

type stopConn struct {
	mcp.Connection
	stop func() bool
}

func (c *stopConn) Close() error {
	c.stop()
	return c.Connection.Close()
}
