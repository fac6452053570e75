package qdrant

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/stratamem/strata/vectorstore"
)

// TestProtocolEmbedderRecord: the embedder is kept in the collection's
// metadata, written once (the first record stands) and read back by a new
// handle; a collection created without it has none.
func TestProtocolEmbedderRecord(t *testing.T) {
	ctx := context.Background()
	f, addr := startFake(t)
	testEmbedderRecord(t, ctx, "qdrant://"+addr+"?collection=emb&dimension=8")
	f.mu.Lock()
	md := f.colls["emb"].meta
	f.mu.Unlock()
	if md[MetaEmbedder].GetStringValue() != "hash-8" || md[MetaEmbedderDimension].GetIntegerValue() != 8 {
		t.Errorf("collection metadata = %v", md)
	}
}

// TestEmbedderRecordQdrant runs the same against a real server
// (STRATA_QDRANT_ADDR, see README.md).
func TestEmbedderRecordQdrant(t *testing.T) {
	addr := realAddr(t)
	ctx := context.Background()
	name := fmt.Sprintf("vt_embedder_%08x", rand.Uint32())
	t.Cleanup(func() {
		cl := newClient(t, addr, os.Getenv(APIKeyEnv))
		_ = cl.DeleteCollection(context.Background(), name)
	})
	testEmbedderRecord(t, ctx, "qdrant://"+addr+"?collection="+name+"&dimension=8")
}

func testEmbedderRecord(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	c, err := vectorstore.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var cl *qc.Client
	var n int
	if !c.As(&cl) || cl == nil || c.As(&n) {
		t.Fatal("As: want the client, and nothing for another type")
	}
	var r vectorstore.EmbedderRecorder
	if !c.As(&r) {
		t.Fatal("the qdrant driver does not keep an embedder record")
	}
	if m, d, err := r.EmbedderRecord(ctx); err != nil || m != "" || d != 0 {
		t.Fatalf("new collection: record %q %d %v, want none", m, d, err)
	}
	if m, d, err := r.RecordEmbedder(ctx, "hash-8", 8); err != nil || m != "hash-8" || d != 8 {
		t.Fatalf("RecordEmbedder = %q %d %v", m, d, err)
	}
	// The first record stands.
	if m, d, err := r.RecordEmbedder(ctx, "other", 8); err != nil || m != "hash-8" || d != 8 {
		t.Fatalf("second RecordEmbedder = %q %d %v, want the first record", m, d, err)
	}
	c2, err := vectorstore.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	var r2 vectorstore.EmbedderRecorder
	if !c2.As(&r2) {
		t.Fatal("reopened: no embedder record")
	}
	if m, d, err := r2.EmbedderRecord(ctx); err != nil || m != "hash-8" || d != 8 {
		t.Fatalf("reopened: record %q %d %v", m, d, err)
	}
}

// StartFake serves the fake on 127.0.0.1 for the external tests (of the
// environment package's use of this driver) and returns its address.
func StartFake(t *testing.T) string {
	_, addr := startFake(t)
	return addr
}
