package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stratamem/strata/server"
)

// TestWriteMemories: POST /v1/memories adds through the layers and
// embeds; PUT /v1/memories/{id} is a compare-and-swap on the revision the
// client read, re-embeds a changed text, and neither lets a key write
// outside its resources.
func TestWriteMemories(t *testing.T) {
	needModel(t)
	for name, target := range targets(t) {
		t.Run(name, func(t *testing.T) {
			_, hs := serve(t, target(t), server.Options{})
			var w server.WriteResult
			if st := call(t, hs, key7, "POST", "/v1/memories", server.MemoryAdd{Layer: "observations", Thread: "t1",
				Text: "The user keeps bees on the roof"}, &w); st != 200 || len(w.Written) != 1 || w.Written[0].Action != "added" {
				t.Fatalf("add an observation: %d %+v", st, w)
			}
			id := w.Written[0].ID
			var m server.Memory
			if st := call(t, hs, key7, "GET", "/v1/memories/"+id, nil, &m); st != 200 || m.Resource != "user-7" || m.Thread != "t1" || m.Revision == 0 {
				t.Fatalf("read the added memory: %d %+v", st, m)
			}
			var hits server.SearchResult
			if st := call(t, hs, key7, "POST", "/v1/search", server.SearchRequest{Query: "beekeeping hobby"}, &hits); st != 200 || len(hits.Memories) == 0 || hits.Memories[0].ID != id {
				t.Fatalf("the added memory is not embedded: %d %+v", st, hits)
			}
			// Each layer path.
			for _, add := range []server.MemoryAdd{
				{Layer: "temporal", Subject: "user", Predicate: "lives in", Value: "Porto"},
				{Layer: "entity", Thread: "t1", Scope: "thread", Name: "Ada", Type: "person", Text: "mathematician"},
				{Layer: "scratchpad", Thread: "t1", Scope: "thread", Key: "plan", Text: "ship on Friday"},
				{Layer: "episodic", Scope: "resource", Run: "r1", Text: "Helped plan the trip"},
				{Layer: "semantic", Thread: "t1", Role: "user", Text: "I moved to Porto"},
			} {
				if st := call(t, hs, key7, "POST", "/v1/memories", add, &w); st != 200 || len(w.Written) == 0 || w.Written[0].Layer != add.Layer {
					t.Errorf("add %s: %d %+v", add.Layer, st, w)
				}
			}
			var e apiError
			for _, c := range []struct {
				add    server.MemoryAdd
				status int
			}{
				{server.MemoryAdd{Layer: "observations", Resource: "user-8", Thread: "t1", Text: "planted"}, http.StatusForbidden},
				{server.MemoryAdd{Layer: "scratchpad", Scope: "global", Key: "k", Text: "planted"}, http.StatusForbidden},
				{server.MemoryAdd{Layer: "observations", Thread: "t1", Text: " "}, http.StatusBadRequest},
				{server.MemoryAdd{Layer: "nosuch", Thread: "t1", Text: "x"}, http.StatusBadRequest},
				{server.MemoryAdd{Layer: "semantic", Thread: "t1", Kind: "context", Text: "x"}, http.StatusBadRequest},
				{server.MemoryAdd{Layer: "observations", Thread: "t1", Text: strings.Repeat("x", 9<<10)}, http.StatusBadRequest},
			} {
				if st := call(t, hs, key7, "POST", "/v1/memories", c.add, &e); st != c.status {
					t.Errorf("add %+v: %d %+v, want %d", c.add, st, e, c.status)
				}
			}
			var list server.ListResult
			if st := call(t, hs, key8, "GET", "/v1/memories", nil, &list); st != 200 || len(list.Memories) != 0 {
				t.Errorf("user-8's memories after user-7's refused writes: %d %+v", st, list)
			}

			edit := server.MemoryEdit{Revision: m.Revision, Layer: m.Layer, Kind: m.Kind, Resource: m.Resource, Thread: m.Thread,
				Text: "The user keeps goats in the garden", Metadata: m.Metadata}
			// user-8 cannot see user-7's memory, so cannot edit it; user-7
			// cannot move it to user-8.
			if st := call(t, hs, key8, "PUT", "/v1/memories/"+id, edit, &e); st != http.StatusNotFound {
				t.Errorf("user-8 edits user-7's memory: %d %+v", st, e)
			}
			moved := edit
			moved.Resource = "user-8"
			if st := call(t, hs, key7, "PUT", "/v1/memories/"+id, moved, &e); st != http.StatusForbidden {
				t.Errorf("user-7 moves its memory to user-8: %d %+v", st, e)
			}
			if st := call(t, hs, key7, "PUT", "/v1/memories/"+id, edit, &w); st != 200 || w.Written[0].Action != "updated, re-embedded" || w.Written[0].Revision == m.Revision {
				t.Fatalf("edit: %d %+v", st, w)
			}
			// The same edit again is at a stale revision: 409, and the
			// stored memory is the first edit's.
			edit.Text = "stale"
			if st := call(t, hs, key7, "PUT", "/v1/memories/"+id, edit, &e); st != http.StatusConflict || e.Error.Code != "conflict" {
				t.Errorf("edit at a stale revision: %d %+v", st, e)
			}
			var now server.Memory
			call(t, hs, key7, "GET", "/v1/memories/"+id, nil, &now)
			if now.Text != "The user keeps goats in the garden" || now.Revision != w.Written[0].Revision {
				t.Errorf("after the conflict: %+v", now)
			}
			if st := call(t, hs, key7, "POST", "/v1/search", server.SearchRequest{Query: "goats", K: 1}, &hits); st != 200 || len(hits.Memories) != 1 || hits.Memories[0].ID != id {
				t.Errorf("the edit was not re-embedded: %d %+v", st, hits)
			}
			if st := call(t, hs, key7, "PUT", "/v1/memories/"+id, server.MemoryEdit{Layer: "observations", Text: "x"}, &e); st != http.StatusBadRequest {
				t.Errorf("an edit with no revision: %d %+v", st, e)
			}
			// The listing an export pages through carries the vectors.
			if st := call(t, hs, key7, "GET", "/v1/memories?vectors=true&limit=2", nil, &list); st != 200 || len(list.Memories) != 2 || len(list.Memories[0].Vector) == 0 || list.NextPageToken == "" {
				t.Errorf("list with vectors: %d %d memories, next %q", st, len(list.Memories), list.NextPageToken)
			}
			var stats server.Stats
			if st := call(t, hs, key7, "GET", "/v1/stats", nil, &stats); st != 200 || stats.ByScope["thread"] == 0 || stats.DataBytes == 0 {
				t.Errorf("stats: %d %+v", st, stats)
			}
			// An edit that leaves the resource out keeps it: never global.
			call(t, hs, key7, "GET", "/v1/memories/"+id, nil, &now)
			kept := server.MemoryEdit{Revision: now.Revision, Layer: now.Layer, Kind: now.Kind, Thread: now.Thread,
				Text: "The user keeps two goats", Metadata: now.Metadata}
			if st := call(t, hs, key7, "PUT", "/v1/memories/"+id, kept, &w); st != 200 {
				t.Fatalf("edit without a resource: %d %+v", st, w)
			}
			call(t, hs, key7, "GET", "/v1/memories/"+id, nil, &now)
			if now.Resource != "user-7" || now.Text != "The user keeps two goats" {
				t.Errorf("after an edit without a resource: %+v", now)
			}
		})
	}
}
