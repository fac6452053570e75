package qdrant

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/vectortest"
)

// The TestProtocol* tests run the driver through the real go-client and a
// real gRPC connection against fakeQdrant, an in-process server on
// 127.0.0.1 built on the client module's generated server stubs. They test
// the driver's wire behaviour (requests, payload layout, indexes, tie
// handling, paging); they are not a conformance run against Qdrant — that
// is TestConformance below.

func newClient(t *testing.T, addr string, apiKey string) *qc.Client {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	cl, err := qc.NewClient(&qc.Config{Host: host, Port: p, APIKey: apiKey, PoolSize: 1, SkipCompatibilityCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestProtocolSuite runs the whole vectortest suite through the wire
// protocol against the fake.
func TestProtocolSuite(t *testing.T) {
	_, addr := startFake(t)
	cl := newClient(t, addr, "")
	vectortest.Run(t, vectortest.Harness{
		Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
			return OpenDriver(ctx, cl, cfg, &Options{Exact: true})
		},
	})
}

func TestProtocolPayloadLayoutAndIndexes(t *testing.T) {
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "layout", &vectorstore.Options{Dimension: 3, MetadataKeys: []string{"lang"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	created := time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.FixedZone("X", 3600))
	err = c.Upsert(ctx, vectorstore.Record{ID: "mem/1", Layer: "semantic", Kind: "fact", Scope: vectorstore.Scope{Thread: "t"},
		Text: "hello", Vector: []float32{3, 0, 4}, Metadata: map[string]string{"lang": "en"}, CreatedAt: created,
		ValidTo: created.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	coll := f.colls["layout"]
	if coll.dist != qc.Distance_Cosine || coll.size != 3 {
		t.Fatalf("collection created with %v/%d", coll.dist, coll.size)
	}
	wantIdx := map[string]qc.FieldType{
		"layer": qc.FieldType_FieldTypeKeyword, "kind": qc.FieldType_FieldTypeKeyword, "thread": qc.FieldType_FieldTypeKeyword,
		"resource": qc.FieldType_FieldTypeKeyword, "metadata.lang": qc.FieldType_FieldTypeKeyword,
		"created_at": qc.FieldType_FieldTypeDatetime, "valid_from": qc.FieldType_FieldTypeDatetime, "valid_to": qc.FieldType_FieldTypeDatetime,
	}
	for k, ft := range wantIdx {
		if coll.schema[k] != ft {
			t.Errorf("payload index %q = %v, want %v", k, coll.schema[k], ft)
		}
	}
	pid := PointID("mem/1")
	if pid != PointID("mem/1") || pid == PointID("mem/2") || len(pid) != 36 {
		t.Fatalf("PointID not a deterministic UUID: %s", pid)
	}
	p := coll.points[pid]
	if p == nil {
		t.Fatalf("point %s not stored under the UUIDv5 of the record id", pid)
	}
	got := map[string]string{}
	for k, v := range p.payload {
		if st := v.GetStructValue(); st != nil {
			for mk, mv := range st.GetFields() {
				got[k+"."+mk] = mv.GetStringValue()
			}
			continue
		}
		got[k] = v.GetStringValue()
	}
	want := map[string]string{"id": "mem/1", "layer": "semantic", "kind": "fact", "thread": "t", "text": "hello",
		"metadata.lang": "en", "created_at": "2024-02-29T22:59:59.123456Z", "valid_to": "2024-02-29T23:59:59.123456Z"}
	if len(got) != len(want) {
		t.Fatalf("payload %v, want %v (empty fields left out)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("payload[%s] = %q, want %q", k, got[k], v)
		}
	}
	for i, w := range f.waits {
		if !w {
			t.Errorf("write %d sent without wait=true: not acknowledged-durable", i)
		}
	}
}

func TestProtocolReopenCreatesMissingIndexes(t *testing.T) {
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "idx", &vectorstore.Options{Dimension: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	before := f.calls["/qdrant.Points/CreateFieldIndex"]
	c, err = OpenCollection(ctx, cl, "idx", &vectorstore.Options{MetadataKeys: []string{"source"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := f.calls["/qdrant.Points/CreateFieldIndex"] - before; n != 1 {
		t.Fatalf("reopen with one new metadata key created %d indexes, want 1", n)
	}
	if f.colls["idx"].schema["metadata.source"] != qc.FieldType_FieldTypeKeyword {
		t.Fatal("metadata.source not indexed")
	}
}

func TestProtocolOpenURL(t *testing.T) {
	f, addr := startFake(t)
	ctx := context.Background()
	c, err := vectorstore.Open(ctx, "qdrant://"+addr+"?collection=byurl&dimension=4&distance=euclidean&exact=true&api_key=s3cret", nil)
	if err != nil {
		t.Fatal(err)
	}
	if info := c.Info(); info.Driver != "qdrant" || info.Distance != vectorstore.Euclidean || info.Dimension != 4 {
		t.Fatalf("Info = %+v", info)
	}
	if err := c.Upsert(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 2, 3, 4}}); err != nil {
		t.Fatal(err)
	}
	ms, err := c.Query(ctx, []float32{1, 2, 3, 5}, vectorstore.QueryOptions{K: 5})
	if err != nil || len(ms) != 1 || ms[0].Score != -1 {
		t.Fatalf("euclidean query %+v %v, want score -1 (negated distance)", ms, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	keys := strings.Join(f.apiKeys, ",")
	f.mu.Unlock()
	if !strings.Contains(keys, "s3cret") {
		t.Fatalf("api key not sent: %q", keys)
	}
	t.Setenv(APIKeyEnv, "from-env")
	c, err = vectorstore.Open(ctx, "qdrant://"+addr+"?collection=byurl", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	f.mu.Lock()
	keys = strings.Join(f.apiKeys, ",")
	f.mu.Unlock()
	if !strings.Contains(keys, "from-env") {
		t.Fatalf("api key from $%s not sent: %q", APIKeyEnv, keys)
	}
	for _, u := range []string{
		"qdrant://" + addr + "/path?collection=x&dimension=2",
		"qdrant://" + addr + "?collection=x&dimension=2&bogus=1",
		"qdrant://" + addr + "?collection=x&dimension=2&exact=maybe",
		"qdrant://" + addr + "?collection=x&dimension=2&pool=0",
		"qdrant://host:notaport?collection=x&dimension=2",
	} {
		if _, err := vectorstore.Open(ctx, u, nil); !errors.Is(err, vectorstore.ErrInvalidArgument) {
			t.Errorf("Open(%q) = %v, want ErrInvalidArgument", u, err)
		}
	}
}

func TestProtocolServerDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens here now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = vectorstore.Open(ctx, "qdrant://"+addr+"?collection=x&dimension=2", nil)
	if err == nil || vectorstore.CodeOf(err) != "" {
		t.Fatalf("open against a closed port: %v, want an untyped transport error", err)
	}
}

func TestProtocolForeignPointIsCorrupt(t *testing.T) {
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "foreign", &vectorstore.Options{Dimension: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A point written by someone else, without the record id payload.
	_, err = cl.Upsert(ctx, &qc.UpsertPoints{CollectionName: "foreign", Wait: qc.PtrOf(true), Points: []*qc.PointStruct{{
		Id: qc.NewIDUUID(PointID("x")), Vectors: qc.NewVectorsDense([]float32{1, 0}),
		Payload: qc.NewValueMap(map[string]any{"created_at": "2024-01-01T00:00:00Z"}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	_ = f
	if _, err := c.Get(ctx, "x"); !errors.Is(err, vectorstore.ErrCorrupt) {
		t.Fatalf("Get of a foreign point: %v, want ErrCorrupt", err)
	}
}

// TestConformance runs the suite against a real Qdrant when
// STRATA_QDRANT_ADDR (host:port of the gRPC API) is set.
func TestConformance(t *testing.T) {
	addr := realAddr(t)
	cl := newClient(t, addr, "")
	var made []string
	t.Cleanup(func() {
		for _, name := range made {
			_ = cl.DeleteCollection(context.Background(), name)
		}
	})
	vectortest.Run(t, vectortest.Harness{
		Open: func(ctx context.Context, t *testing.T, cfg driver.Config) (driver.Collection, error) {
			made = append(made, cfg.Name)
			return OpenDriver(ctx, cl, cfg, &Options{Exact: true})
		},
	})
}

// realAddr returns STRATA_QDRANT_ADDR or skips.
func realAddr(t *testing.T) string {
	addr := strings.TrimPrefix(strings.TrimSpace(getenv("STRATA_QDRANT_ADDR")), "qdrant://")
	if addr == "" {
		t.Skip("STRATA_QDRANT_ADDR not set: start Qdrant with `docker run -p 6333:6333 -p 6334:6334 qdrant/qdrant` " +
			"and run `STRATA_QDRANT_ADDR=localhost:6334 go test -race ./vectorstore/qdrant/`")
	}
	return addr
}

// TestProtocolDeleteWhereRace moves a matching record out of the filter's
// scope between DeleteWhere's scan and its delete, as a concurrent
// re-upsert by another writer would. The delete must carry the filter
// conditions along with the scanned ids, so the moved record survives.
func TestProtocolDeleteWhereRace(t *testing.T) {
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "race", &vectorstore.Options{Dimension: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, r := range []vectorstore.Record{
		{ID: "a", Scope: vectorstore.Scope{Thread: "t1"}, Vector: []float32{1, 0}},
		{ID: "b", Scope: vectorstore.Scope{Thread: "t1"}, Vector: []float32{0, 1}},
		{ID: "c", Scope: vectorstore.Scope{Thread: "t2"}, Vector: []float32{1, 1}},
	} {
		if err := c.Upsert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	f.afterScroll = func(fc *fakeColl) {
		fc.points[PointID("b")].payload[keyThread] = qc.NewValueString("t2")
		f.afterScroll = nil
	}
	f.deletes = nil
	f.mu.Unlock()
	if _, err := c.DeleteWhere(ctx, vectorstore.Filter{Thread: "t1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "a"); !errors.Is(err, vectorstore.ErrNotFound) {
		t.Fatalf("a: %v, want deleted", err)
	}
	b, err := c.Get(ctx, "b")
	if err != nil || b.Scope.Thread != "t2" {
		t.Fatalf("b, moved to thread t2 before the delete: %+v %v, want kept", b, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.deletes) != 1 {
		t.Fatalf("%d delete requests, want 1", len(f.deletes))
	}
	flt := f.deletes[0].GetPoints().GetFilter()
	var hasIDs []string
	var thread string
	for _, cond := range flt.GetMust() {
		if h := cond.GetHasId(); h != nil {
			for _, id := range h.GetHasId() {
				hasIDs = append(hasIDs, id.GetUuid())
			}
		}
		if fc := cond.GetField(); fc != nil && fc.GetKey() == keyThread {
			thread = fc.GetMatch().GetKeyword()
		}
	}
	slices.Sort(hasIDs)
	want := []string{PointID("a"), PointID("b")}
	slices.Sort(want)
	if !slices.Equal(hasIDs, want) || thread != "t1" {
		t.Fatalf("delete selector %v: has_id %v, thread %q; want has_id %v AND thread t1", flt, hasIDs, thread, want)
	}
}

// TestProtocolTimeout: against a server that does not answer, a call whose
// context has no deadline fails once Options.Timeout passes, with an error
// matching context.DeadlineExceeded; a caller's own deadline is kept.
func TestProtocolTimeout(t *testing.T) {
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "slow", &vectorstore.Options{Dimension: 2}, &Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f.mu.Lock()
	f.delay = time.Minute // "hung": far longer than the test may take
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.delay = 0
		f.mu.Unlock()
	}()
	if _, err := c.Count(ctx, vectorstore.Filter{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Count against a hung server: %v, want context.DeadlineExceeded", err)
	}
	if err := c.Upsert(ctx, vectorstore.Record{ID: "x", Vector: []float32{1, 0}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Upsert against a hung server: %v, want context.DeadlineExceeded", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Count(cctx, vectorstore.Filter{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Count with a cancelled context: %v, want context.Canceled", err)
	}
	// Opening is bounded too.
	if _, err := OpenDriver(ctx, cl, driver.Config{Name: "slow"}, &Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("OpenDriver against a hung server: %v, want context.DeadlineExceeded", err)
	}
	// The URL parameter.
	for _, v := range []string{"0s", "-1s", "soon"} {
		_, err := vectorstore.Open(ctx, "qdrant://"+addr+"?collection=slow&timeout="+v, nil)
		if !errors.Is(err, vectorstore.ErrInvalidArgument) {
			t.Errorf("timeout=%s: %v, want ErrInvalidArgument", v, err)
		}
	}
	if _, err := vectorstore.Open(ctx, "qdrant://"+addr+"?collection=slow&timeout=150ms", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open with timeout=150ms against a hung server: %v, want context.DeadlineExceeded", err)
	}
}

// TestWithCtxDeadlineStatus: the server can answer DeadlineExceeded a
// moment before the client's context shows it; the error must still match
// context.DeadlineExceeded.
func TestWithCtxDeadlineStatus(t *testing.T) {
	st := status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	err := qerr(context.Background(), fmt.Errorf("Upsert() failed: x: %w", st))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v does not match context.DeadlineExceeded", err)
	}
	if err := qerr(context.Background(), status.Error(codes.Unavailable, "down")); errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("%v matches a context error", err)
	}
}
