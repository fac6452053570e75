// Package client calls a running `strata serve` over its HTTP API, with
// the request and answer types of package server, for Go tools that work
// on a store another process owns (memctl --server):
//
//	c, err := client.New("http://127.0.0.1:7411", client.Options{Key: os.Getenv("STRATA_API_KEY")})
//	hits, err := c.Search(ctx, server.SearchRequest{Resource: "user-7", Query: "where does she live"})
//
// An error answer comes back as *Error, whose Status and Code are the
// server's, and which matches (errors.Is) the server's sentinel errors:
// server.ErrForbidden, server.ErrNotFound, server.ErrConflict,
// server.ErrRateLimited, ...
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/server"
)

// Options configure a Client. The zero value sends no key and uses
// http.DefaultClient.
type Options struct {
	// Key is the API key sent as a bearer token.
	Key string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Client calls one server.
type Client struct {
	base *url.URL
	opts Options
}

// ErrInvalidURL is wrapped by New for a base URL it cannot use.
var ErrInvalidURL = errors.New("client: invalid server URL")

// New returns a client of the server at base (http:// or https://, the
// address `strata serve` prints).
func New(base string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: want http://HOST:PORT, got %q", ErrInvalidURL, base)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	return &Client{base: u, opts: opts}, nil
}

// Error is an error answer of the server.
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is the server's advice on a rate-limit answer.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("strata server: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is matches the server's sentinel error of the answer's status.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusUnauthorized:
		return target == server.ErrUnauthenticated
	case http.StatusForbidden:
		return target == server.ErrForbidden
	case http.StatusNotFound:
		return target == server.ErrNotFound
	case http.StatusConflict:
		return target == server.ErrConflict
	case http.StatusRequestEntityTooLarge:
		return target == server.ErrTooLarge
	case http.StatusTooManyRequests:
		return target == server.ErrRateLimited
	case http.StatusBadRequest:
		return target == server.ErrInvalidRequest
	case http.StatusServiceUnavailable:
		return target == server.ErrShuttingDown
	case http.StatusNotImplemented:
		return target == server.ErrNoState
	}
	return false
}

// do sends one request and decodes a 200 answer into out.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("client: encode the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Key)
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("client: %s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Status: resp.StatusCode, Code: "unknown", Message: strings.TrimSpace(string(b))}
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			e.Code, e.Message = eb.Error.Code, eb.Error.Message
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("client: %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

func values(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// WhoAmI says what the client's key may use.
func (c *Client) WhoAmI(ctx context.Context) (server.WhoAmI, error) {
	var out server.WhoAmI
	return out, c.do(ctx, "GET", "/v1/whoami", nil, nil, &out)
}

// Search is POST /v1/search.
func (c *Client) Search(ctx context.Context, req server.SearchRequest) (server.SearchResult, error) {
	var out server.SearchResult
	return out, c.do(ctx, "POST", "/v1/search", nil, req, &out)
}

// List is GET /v1/memories: one page.
func (c *Client) List(ctx context.Context, req server.ListRequest) (server.ListResult, error) {
	q := values("resource", req.Resource, "layer", req.Layer, "kind", req.Kind, "thread", req.Thread,
		"limit", itoa(req.Limit), "page_token", req.PageToken)
	if req.Newest {
		q.Set("order", "newest")
	}
	var out server.ListResult
	return out, c.do(ctx, "GET", "/v1/memories", q, nil, &out)
}

// Get is GET /v1/memories/{id}.
func (c *Client) Get(ctx context.Context, id string) (server.Memory, error) {
	var out server.Memory
	return out, c.do(ctx, "GET", "/v1/memories/"+url.PathEscape(id), nil, nil, &out)
}

// Forget is POST /v1/forget.
func (c *Client) Forget(ctx context.Context, req server.ForgetRequest) (server.ForgetResult, error) {
	var out server.ForgetResult
	return out, c.do(ctx, "POST", "/v1/forget", nil, req, &out)
}

// RecordFacts is POST /v1/facts.
func (c *Client) RecordFacts(ctx context.Context, req server.FactsRequest) (server.FactsResult, error) {
	var out server.FactsResult
	return out, c.do(ctx, "POST", "/v1/facts", nil, req, &out)
}

// UpdateEntities is POST /v1/entities.
func (c *Client) UpdateEntities(ctx context.Context, req server.EntitiesRequest) (server.EntitiesResult, error) {
	var out server.EntitiesResult
	return out, c.do(ctx, "POST", "/v1/entities", nil, req, &out)
}

// SetScratchpad is POST /v1/scratchpad.
func (c *Client) SetScratchpad(ctx context.Context, req server.ScratchpadUpdate) (server.ScratchpadResult, error) {
	var out server.ScratchpadResult
	return out, c.do(ctx, "POST", "/v1/scratchpad", nil, req, &out)
}

// Scratchpad is GET /v1/scratchpad.
func (c *Client) Scratchpad(ctx context.Context, req server.ScratchpadQuery) (server.Notes, error) {
	var out server.Notes
	return out, c.do(ctx, "GET", "/v1/scratchpad", values("resource", req.Resource, "thread", req.Thread, "key", req.Key), nil, &out)
}

// AddMessages is POST /v1/messages.
func (c *Client) AddMessages(ctx context.Context, req server.MessagesRequest) (server.MessagesResult, error) {
	var out server.MessagesResult
	return out, c.do(ctx, "POST", "/v1/messages", nil, req, &out)
}

// Stats is GET /v1/stats.
func (c *Client) Stats(ctx context.Context, resource string) (server.Stats, error) {
	var out server.Stats
	return out, c.do(ctx, "GET", "/v1/stats", values("resource", resource), nil, &out)
}

func stateQuery(k server.StateKey) url.Values {
	q := values("resource", k.Resource, "thread", k.Thread)
	if k.Global {
		q.Set("scope", "global")
	}
	return q
}

func statePath(k server.StateKey) string {
	name := k.Name
	if name == "" {
		name = "state"
	}
	return "/v1/state/" + url.PathEscape(k.Layer) + "/" + url.PathEscape(name)
}

// ListState is GET /v1/state.
func (c *Client) ListState(ctx context.Context, k server.StateKey) (server.StateKeys, error) {
	q := stateQuery(k)
	if k.Layer != "" {
		q.Set("layer", k.Layer)
	}
	var out server.StateKeys
	return out, c.do(ctx, "GET", "/v1/state", q, nil, &out)
}

// GetState is GET /v1/state/{layer}/{name}.
func (c *Client) GetState(ctx context.Context, k server.StateKey) (server.StateValue, error) {
	var out server.StateValue
	return out, c.do(ctx, "GET", statePath(k), stateQuery(k), nil, &out)
}

// PutState is PUT /v1/state/{layer}/{name}: written if the stored
// revision is still req.Revision (an *Error matching server.ErrConflict
// otherwise).
func (c *Client) PutState(ctx context.Context, req server.StatePut) (server.StateValue, error) {
	body := struct {
		Value    json.RawMessage `json:"value"`
		Revision int64           `json:"revision"`
	}{req.Value, req.Revision}
	var out server.StateValue
	return out, c.do(ctx, "PUT", statePath(req.StateKey), stateQuery(req.StateKey), body, &out)
}

// DeleteState is DELETE /v1/state/{layer}/{name}.
func (c *Client) DeleteState(ctx context.Context, k server.StateKey, revision int64) error {
	q := stateQuery(k)
	q.Set("revision", strconv.FormatInt(revision, 10))
	return c.do(ctx, "DELETE", statePath(k), q, nil, nil)
}

// Assembly is GET /v1/assembly: a recorded assembly, the newest when
// turn is 0.
func (c *Client) Assembly(ctx context.Context, resource, thread string, turn int) (*inspect.Plan, error) {
	var out inspect.Plan
	if err := c.do(ctx, "GET", "/v1/assembly", values("resource", resource, "thread", thread, "turn", itoa(turn)), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Assemblies is GET /v1/assemblies.
func (c *Client) Assemblies(ctx context.Context, resource, thread string) (server.AssemblyList, error) {
	var out server.AssemblyList
	return out, c.do(ctx, "GET", "/v1/assemblies", values("resource", resource, "thread", thread), nil, &out)
}

// Healthy reports whether the server answers /healthz with 200.
func (c *Client) Healthy(ctx context.Context) error {
	return c.do(ctx, "GET", "/healthz", nil, nil, nil)
}
