package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/environment"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/server"
	"github.com/stratamem/strata/server/client"
)

// start serves an embedded store (hashing embedder: no model needed) and
// returns clients with user-7's and user-8's keys.
func start(t *testing.T) (c7, c8 *client.Client) {
	t.Helper()
	env, err := environment.Open(context.Background(), filepath.Join(t.TempDir(), "data"), environment.Options{Embedder: hashing.New(256)})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := server.NewKeyring(
		server.Key{Name: "agent-7", Secret: "key-of-user-7-0123456789", Resources: []string{"user-7"}},
		server.Key{Name: "agent-8", Secret: "key-of-user-8-0123456789", Resources: []string{"user-8"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(env, server.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Shutdown(context.Background())
		_ = env.Close()
	})
	mk := func(key string) *client.Client {
		c, err := client.New(hs.URL, client.Options{Key: key, HTTPClient: hs.Client()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return mk("key-of-user-7-0123456789"), mk("key-of-user-8-0123456789")
}

func TestClient(t *testing.T) {
	c7, c8 := start(t)
	ctx := context.Background()
	if err := c7.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	who, err := c7.WhoAmI(ctx)
	if err != nil || who.Name != "agent-7" {
		t.Fatalf("whoami %+v %v", who, err)
	}
	fr, err := c7.RecordFacts(ctx, server.FactsRequest{Facts: []temporal.Input{{Subject: "user", Predicate: "lives in", Value: "Lisbon"}}})
	if err != nil || fr.Added != 1 {
		t.Fatalf("facts %+v %v", fr, err)
	}
	id := fr.Facts[0].ID
	hits, err := c7.Search(ctx, server.SearchRequest{Query: "user lives in Lisbon", K: 1})
	if err != nil || len(hits.Memories) != 1 || hits.Memories[0].ID != id {
		t.Fatalf("search %+v %v", hits, err)
	}
	page, err := c7.List(ctx, server.ListRequest{Layer: "temporal", Limit: 10})
	if err != nil || len(page.Memories) != 1 {
		t.Fatalf("list %+v %v", page, err)
	}
	if m, err := c7.Get(ctx, id); err != nil || m.Resource != "user-7" {
		t.Fatalf("get %+v %v", m, err)
	}
	// Another resource's: typed errors matching the server's sentinels.
	if _, err := c8.Get(ctx, id); !errors.Is(err, server.ErrNotFound) {
		t.Errorf("user-8 gets user-7's id: %v", err)
	}
	var ce *client.Error
	if _, err := c8.Search(ctx, server.SearchRequest{Resource: "user-7", Query: "x"}); !errors.Is(err, server.ErrForbidden) || !errors.As(err, &ce) || ce.Code != "forbidden" {
		t.Errorf("user-8 searches user-7: %v", err)
	}
	// State, compare-and-swap.
	k := server.StateKey{Thread: "t1", Layer: "todos"}
	sv, err := c7.PutState(ctx, server.StatePut{StateKey: k, Value: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c7.PutState(ctx, server.StatePut{StateKey: k, Value: json.RawMessage(`{"n":2}`)}); !errors.Is(err, server.ErrConflict) {
		t.Errorf("stale put: %v", err)
	}
	if got, err := c7.GetState(ctx, k); err != nil || got.Revision != sv.Revision || string(got.Value) != `{"n":1}` {
		t.Errorf("get state %+v %v", got, err)
	}
	if ks, err := c7.ListState(ctx, server.StateKey{}); err != nil || len(ks.Keys) != 1 {
		t.Errorf("list state %+v %v", ks, err)
	}
	if err := c7.DeleteState(ctx, k, sv.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := c7.GetState(ctx, k); !errors.Is(err, server.ErrNotFound) {
		t.Errorf("deleted state: %v", err)
	}
	if st, err := c7.Stats(ctx, ""); err != nil || st.Records != 1 {
		t.Errorf("stats %+v %v", st, err)
	}
	if _, err := c7.Assembly(ctx, "", "t1", 0); !errors.Is(err, server.ErrNotFound) {
		t.Errorf("no recorded assembly: %v", err)
	}
	if res, err := c7.Forget(ctx, server.ForgetRequest{IDs: []string{id}}); err != nil || res.Records != 1 {
		t.Errorf("forget %+v %v", res, err)
	}
	if _, err := client.New("localhost:7411", client.Options{}); !errors.Is(err, client.ErrInvalidURL) {
		t.Errorf("a URL without scheme: %v", err)
	}
}
