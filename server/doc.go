// Package server serves one strata store to other processes and other
// languages: an HTTP/JSON API under /v1/, MCP (the Model Context
// Protocol, through the official Go SDK) over streamable HTTP at /mcp and
// over stdio, /healthz and /metrics. The command `strata serve`
// (cmd/strata) runs it; a Go host can embed it:
//
//	env, _ := environment.Open(ctx, ".strata/data", environment.Options{})
//	keys, _ := server.NewKeyring(server.Key{Name: "agent-7", Secret: secret, Resources: []string{"user-7"}})
//	srv, _ := server.New(env, server.Options{Keys: keys})
//	hs := &http.Server{Addr: "127.0.0.1:7411", Handler: srv.Handler()}
//	go hs.ListenAndServe()
//	...
//	_ = hs.Shutdown(ctx)   // stop taking requests, finish those under way
//	_ = srv.Shutdown(ctx)  // wait for operations still running (stdio, embedders)
//	_ = env.Close()        // every acknowledged write is in the store
//
// # Keys and resources
//
// Every request but /healthz and /metrics carries an API key
// (Authorization: Bearer KEY, or X-API-Key: KEY). A key is bound to the
// resources (users) it may read and write; a key for user-7 can never
// read or write user-8: naming another resource is refused (403), and an
// id of another resource's memory is not found (404), so ids are not
// confirmed to exist. A request may leave the resource out when its key
// has one. A key bound to "*" is an admin's: every resource, global
// layer state, and counts over the whole store. Keys live in a JSON file
// (ReadKeyFile), as the secret or only its SHA-256.
//
// # Limits
//
// A request body over Options.MaxBodyBytes (1 MiB by default) is refused
// with 413, a key over its rate (Options.Rate per second, Options.Burst at
// once; 50 and 100 by default) with 429 and Retry-After, both as a
// *LimitError (errors.Is ErrTooLarge, ErrRateLimited). Failed
// authentications are rate limited per remote address.
//
// # Shutdown
//
// Server.Shutdown refuses new operations (503, ErrShuttingDown) and waits
// for those under way, so that a write the server acknowledged is in the
// store when the host closes it. The MCP endpoint runs stateless: no
// session or event stream outlives its request, so an HTTP shutdown never
// waits for an idle client, and any of several server processes over one
// PostgreSQL store can answer any request.
//
// # HTTP routes
//
// Bodies and answers are JSON; an error is {"error": {"code", "message"}}
// with code one of unauthenticated (401), forbidden (403), not_found
// (404), conflict (409), too_large (413), rate_limited (429),
// invalid_request (400), shutting_down (503), no_state_store (501),
// timeout (504), internal (500). Query parameters resource and thread
// name the scope where a route takes them.
//
//	GET    /v1/whoami                          the key's name and resources
//	POST   /v1/search                          SearchRequest → SearchResult (memories by meaning)
//	GET    /v1/memories?layer=&kind=&thread=&limit=&page_token=&order=newest&vectors=true&terms=true   ListResult (ls; export)
//	POST   /v1/memories                        MemoryAdd → WriteResult (add through the layer's path, embedded here)
//	GET    /v1/memories/{id}                   Memory (show)
//	PUT    /v1/memories/{id}                   MemoryEdit → WriteResult (edit at the revision read; 409 when it moved on)
//	DELETE /v1/memories/{id}                   ForgetResult (rm one)
//	POST   /v1/forget                          ForgetRequest → ForgetResult (rm by ids, or all of a resource)
//	GET    /v1/facts?as_of=RFC3339             FactList
//	POST   /v1/facts                           FactsRequest → FactsResult (temporal ledger)
//	GET    /v1/entities                        EntityList
//	POST   /v1/entities                        EntitiesRequest → EntitiesResult
//	GET    /v1/scratchpad?key=                 Notes (a thread's with thread=)
//	POST   /v1/scratchpad                      ScratchpadUpdate → ScratchpadResult
//	POST   /v1/messages                        MessagesRequest → MessagesResult (searchable history)
//	GET    /v1/stats                           Stats (the whole store for an admin without resource=)
//	GET    /v1/state?layer=                    StateKeys: layer state of the resource and its threads (state ls)
//	GET    /v1/state/{layer}/{name}            StateValue (state get; scope=global for an admin; raw=true adds the stored bytes)
//	PUT    /v1/state/{layer}/{name}            {"value": JSON, "revision": N} → StateValue; 409 on a stale revision
//	DELETE /v1/state/{layer}/{name}?revision=N {"deleted": true}
//	GET    /v1/assemblies?thread=              the thread's recorded assemblies, oldest first (inspect --list)
//	GET    /v1/assembly?thread=&turn=N         one recorded assembly, the newest without turn (inspect)
//	POST   /mcp                                MCP, streamable HTTP (stateless, JSON answers)
//	GET    /healthz                            {"status": "ok"}, 503 while draining or when the store fails
//	GET    /metrics                            Prometheus text
//
// The routes are versioned: a change that breaks a client gets /v2/.
// Package server/client calls them from Go with these types.
//
// # MCP tools
//
// search_memories, list_memories, forget_memories, record_facts,
// list_facts, update_entities, list_entities, read_scratchpad and
// set_scratchpad, each taking the resource (or the key's only one) and
// the fields of the request type of the same operation. A refused call
// is a tool error (IsError) whose text the model reads.
//
// # Layers
//
// The server writes through the memory layers themselves (temporal,
// entity, scratchpad, semantic), with their validation, merging and
// record ids, so an agent that runs the same layers at the same scope
// sees what the server wrote, and the other way round. Options.Layers
// sets their options; their scope defaults to the resource.
//
// # Observability
//
// Every request is a server span (HTTP semantic conventions: method,
// route, status) and every MCP tool call an execute_tool span
// (gen_ai.tool.name), with the embedding calls (GenAI attributes), vector
// queries and memory writes (database attributes) under them; see
// package telemetry. /metrics serves the request duration histogram,
// recall latency, vector query latency, writes and write errors.
package server
