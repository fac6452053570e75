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
			return openDriver(ctx, cl, cfg, &Options{Exact: true})
		},
	})
}

func TestProtocolPayloadLayoutAndIndexes(t *testing.T) {
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "layout", &Options{Options: vectorstore.Options{Dimension: 3, MetadataKeys: []string{"lang"}}})
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
		"revision": qc.FieldType_FieldTypeInteger,
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
	if rev := p.payload[keyRevision].GetIntegerValue(); rev <= 0 {
		t.Fatalf("payload revision %v, want a positive integer", p.payload[keyRevision])
	}
	if _, ok := p.payload[keyWrites]; ok {
		t.Fatal("a plain upsert stored write tokens")
	}
	for k, v := range p.payload {
		if k == keyRevision {
			continue
		}
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
	c, err := OpenCollection(ctx, cl, "idx", &Options{Options: vectorstore.Options{Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	before := f.calls["/qdrant.Points/CreateFieldIndex"]
	c, err = OpenCollection(ctx, cl, "idx", &Options{Options: vectorstore.Options{MetadataKeys: []string{"source"}}})
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
	c, err := OpenCollection(ctx, cl, "foreign", &Options{Options: vectorstore.Options{Dimension: 2}})
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
			return openDriver(ctx, cl, cfg, &Options{Exact: true})
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
	c, err := OpenCollection(ctx, cl, "race", &Options{Options: vectorstore.Options{Dimension: 2}})
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
	c, err := OpenCollection(ctx, cl, "slow", &Options{Options: vectorstore.Options{Dimension: 2}, Timeout: 200 * time.Millisecond})
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
	if _, err := openDriver(ctx, cl, driver.Config{Name: "slow"}, &Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("openDriver against a hung server: %v, want context.DeadlineExceeded", err)
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

// openCAS opens a fresh collection "cas" on a fake and returns both.
func openCAS(t *testing.T) (*fakeQdrant, *vectorstore.Collection) {
	t.Helper()
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	c, err := OpenCollection(context.Background(), cl, "cas", &Options{Options: vectorstore.Options{Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return f, c
}

// TestProtocolConditionalRequests: UpsertIf is a conditional upsert
// (insert_only to create, update_only with a revision filter to update),
// with wait=true and strong ordering; DeleteIf deletes by has_id AND the
// revision.
func TestProtocolConditionalRequests(t *testing.T) {
	f, c := openCAS(t)
	ctx := context.Background()
	r1, err := c.UpsertIf(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.UpsertIf(ctx, vectorstore.Record{ID: "a", Vector: []float32{0, 1}}, r1)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	ups := slices.Clone(f.upserts)
	f.mu.Unlock()
	if len(ups) != 2 {
		t.Fatalf("%d upsert requests, want 2", len(ups))
	}
	if u := ups[0]; u.GetUpdateMode() != qc.UpdateMode_InsertOnly || u.UpdateFilter != nil || !u.GetWait() || u.GetOrdering().GetType() != qc.WriteOrderingType_Strong {
		t.Fatalf("create request: mode %v, filter %v, wait %v, ordering %v", u.GetUpdateMode(), u.GetUpdateFilter(), u.GetWait(), u.GetOrdering())
	}
	u := ups[1]
	if u.GetUpdateMode() != qc.UpdateMode_UpdateOnly || !u.GetWait() || u.GetOrdering().GetType() != qc.WriteOrderingType_Strong {
		t.Fatalf("update request: mode %v, wait %v, ordering %v", u.GetUpdateMode(), u.GetWait(), u.GetOrdering())
	}
	must := u.GetUpdateFilter().GetMust()
	if len(must) != 1 || must[0].GetField().GetKey() != keyRevision || must[0].GetField().GetMatch().GetInteger() != r1 {
		t.Fatalf("update filter %v, want revision = %d", u.GetUpdateFilter(), r1)
	}
	if w := u.GetPoints()[0].GetPayload()[keyWrites].GetListValue().GetValues(); len(w) != 2 {
		t.Fatalf("second conditional write carries %d tokens, want its own and the first one's", len(w))
	}
	f.mu.Lock()
	f.deletes = nil
	f.mu.Unlock()
	if err := c.DeleteIf(ctx, "a", r2); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.deletes) != 1 {
		t.Fatalf("%d delete requests, want 1", len(f.deletes))
	}
	var hasID, rev bool
	for _, cond := range f.deletes[0].GetPoints().GetFilter().GetMust() {
		if h := cond.GetHasId(); h != nil && len(h.GetHasId()) == 1 && h.GetHasId()[0].GetUuid() == PointID("a") {
			hasID = true
		}
		if fc := cond.GetField(); fc.GetKey() == keyRevision && fc.GetMatch().GetInteger() == r2 {
			rev = true
		}
	}
	if !hasID || !rev || f.deletes[0].GetOrdering().GetType() != qc.WriteOrderingType_Strong {
		t.Fatalf("delete selector %v: want has_id(a) AND revision = %d, strong ordering", f.deletes[0].GetPoints(), r2)
	}
}

// casWriter simulates another client's successful conditional write of id
// on the fake: a new revision and its token in front of the point's
// tokens.
func casWriter(fc *fakeColl, id, text string, token int64) {
	p := fc.points[PointID(id)]
	vs := append([]*qc.Value{qc.NewValueInt(token)}, p.payload[keyWrites].GetListValue().GetValues()...)
	p.payload[keyWrites] = qc.NewValueFromList(vs...)
	p.payload[keyRevision] = qc.NewValueInt(p.payload[keyRevision].GetIntegerValue() + 1)
	p.payload[keyText] = qc.NewValueString(text)
}

// TestProtocolConditionalRaces places another writer between UpsertIf's
// read and its write (the conditional upsert must be refused by the server
// and reported as a conflict), and between its write and its read back
// (the write happened: success, although the point moved on).
func TestProtocolConditionalRaces(t *testing.T) {
	f, c := openCAS(t)
	ctx := context.Background()
	r1, err := c.UpsertIf(ctx, vectorstore.Record{ID: "a", Text: "one", Vector: []float32{1, 0}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.afterGet = func(fc *fakeColl) {
		casWriter(fc, "a", "theirs", 42)
		f.afterGet = nil
	}
	f.mu.Unlock()
	_, err = c.UpsertIf(ctx, vectorstore.Record{ID: "a", Text: "mine", Vector: []float32{1, 0}}, r1)
	if !errors.Is(err, vectorstore.ErrConflict) {
		t.Fatalf("write raced by another writer after the read: %v, want ErrConflict", err)
	}
	got, err := c.Get(ctx, "a")
	if err != nil || got.Text != "theirs" || got.Revision != r1+1 {
		t.Fatalf("after the lost race: %+v %v, want the other writer's record", got, err)
	}
	f.mu.Lock()
	f.afterUpsert = func(fc *fakeColl) {
		casWriter(fc, "a", "next", 43)
		f.afterUpsert = nil
	}
	f.mu.Unlock()
	r3, err := c.UpsertIf(ctx, vectorstore.Record{ID: "a", Text: "mine", Vector: []float32{1, 0}}, got.Revision)
	if err != nil {
		t.Fatalf("write followed by another writer's before the read back: %v, want success", err)
	}
	if r3 <= got.Revision {
		t.Fatalf("revision %d after %d", r3, got.Revision)
	}
	// A point deleted between the read and the write is not re-created.
	f.mu.Lock()
	f.afterGet = func(fc *fakeColl) {
		delete(fc.points, PointID("a"))
		f.afterGet = nil
	}
	f.mu.Unlock()
	cur, _ := c.Get(ctx, "a")
	_, err = c.UpsertIf(ctx, vectorstore.Record{ID: "a", Text: "zombie", Vector: []float32{1, 0}}, cur.Revision)
	if !errors.Is(err, vectorstore.ErrConflict) {
		t.Fatalf("write of a point deleted after the read: %v, want ErrConflict", err)
	}
	if _, err := c.Get(ctx, "a"); !errors.Is(err, vectorstore.ErrNotFound) {
		t.Fatalf("conditional update re-created a deleted point: %v", err)
	}
}

// TestProtocolConditionalNeedsQdrant117: an older server would ignore the
// update mode and write unconditionally, so nothing is sent to it.
func TestProtocolConditionalNeedsQdrant117(t *testing.T) {
	f, c := openCAS(t)
	ctx := context.Background()
	f.mu.Lock()
	f.version = "1.16.3"
	f.mu.Unlock()
	if _, err := c.UpsertIf(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0}}, 0); !errors.Is(err, ErrNoConditionalWrites) || !strings.Contains(err.Error(), "1.16.3") {
		t.Fatalf("UpsertIf on Qdrant 1.16: %v, want ErrNoConditionalWrites naming the version", err)
	}
	if err := c.DeleteIf(ctx, "a", 1); !errors.Is(err, ErrNoConditionalWrites) {
		t.Fatalf("DeleteIf on Qdrant 1.16: %v", err)
	}
	f.mu.Lock()
	n := len(f.upserts) + len(f.deletes)
	f.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d writes sent to a server without conditional writes", n)
	}
	// Plain writes still work.
	if err := c.Upsert(ctx, vectorstore.Record{ID: "a", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{"1.17.0": true, "v1.17.1-dev": true, "2.0": true, "1.16.9": false, "dev": false, "": false, "1.x": false} {
		if got := versionAtLeast(v, 1, 17); got != want {
			t.Errorf("versionAtLeast(%q, 1, 17) = %v", v, got)
		}
	}
}

// TestProtocolLegacyPointRevision: a point written before revisions
// existed reads as revision 1 and takes a conditional write at 1.
func TestProtocolLegacyPointRevision(t *testing.T) {
	f, addr := startFake(t)
	_ = f
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "legacy", &Options{Options: vectorstore.Options{Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = cl.Upsert(ctx, &qc.UpsertPoints{CollectionName: "legacy", Wait: qc.PtrOf(true), Points: []*qc.PointStruct{{
		Id: qc.NewIDUUID(PointID("old")), Vectors: qc.NewVectorsDense([]float32{1, 0}),
		Payload: qc.NewValueMap(map[string]any{"id": "old", "text": "", "created_at": "2024-01-01T00:00:00.000000Z"}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "old")
	if err != nil || got.Revision != 1 {
		t.Fatalf("legacy point: %+v %v, want revision 1", got, err)
	}
	rev, err := c.UpsertIf(ctx, vectorstore.Record{ID: "old", Text: "new", Vector: []float32{1, 0}}, 1)
	if err != nil || rev <= 1 {
		t.Fatalf("UpsertIf at revision 1 of a legacy point: %d %v", rev, err)
	}
	if _, err := c.UpsertIf(ctx, vectorstore.Record{ID: "old", Vector: []float32{1, 0}}, 1); !errors.Is(err, vectorstore.ErrConflict) {
		t.Fatalf("second UpsertIf at revision 1: %v, want ErrConflict", err)
	}
}

// TestProtocolURLStrict: unknown and malformed parameters are refused
// before any request, with the parameter named.
func TestProtocolURLStrict(t *testing.T) {
	f, addr := startFake(t)
	for q, field := range map[string]string{
		"bogus=1":                 "bogus",
		"Exact=true":              "Exact",
		"exact=maybe":             "exact",
		"tls=2":                   "tls",
		"pool=0":                  "pool",
		"pool=65":                 "pool",
		"timeout=0s":              "timeout",
		"collection=a;b":          "url",
		"api_key=a&api_key=b":     "api_key",
		"api_key=":                "api_key",
		"exact=true&exact=false":  "exact",
		"dimension=2&dimension=3": "dimension",
	} {
		_, err := vectorstore.Open(context.Background(), "qdrant://"+addr+"?dimension=2&"+q, nil)
		if strings.HasPrefix(q, "dimension=") {
			_, err = vectorstore.Open(context.Background(), "qdrant://"+addr+"?"+q, nil)
		}
		var e *driver.Error
		if !errors.As(err, &e) || e.Code != driver.CodeInvalidArgument || e.Field != field {
			t.Errorf("?%s: %v, want CodeInvalidArgument on %q", q, err, field)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.colls) != 0 {
		t.Fatalf("refused URLs created %d collections", len(f.colls))
	}
}

// TestProtocolTermsPayload: a record's document is two parallel payload
// lists (terms sorted, weights as doubles), so no term becomes a payload
// key; it round trips exactly, Query leaves it on the server, and a
// malformed one is corruption.
func TestProtocolTermsPayload(t *testing.T) {
	f, addr := startFake(t)
	cl := newClient(t, addr, "")
	ctx := context.Background()
	c, err := OpenCollection(ctx, cl, "terms", &Options{Options: vectorstore.Options{Dimension: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	terms := vectorstore.Terms{"b.c": 2, "a": 0.1, "$x": 1, "metadata": 3}
	if err := c.Upsert(ctx,
		vectorstore.Record{ID: "with", Layer: "l", Vector: []float32{1, 0}, Terms: terms},
		vectorstore.Record{ID: "without", Layer: "l", Vector: []float32{0, 1}},
	); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	p := f.colls["terms"].points[PointID("with")].payload
	var gotT []string
	var gotW []float64
	for _, v := range p[keyTerms].GetListValue().GetValues() {
		gotT = append(gotT, v.GetStringValue())
	}
	for _, v := range p[keyTermWeights].GetListValue().GetValues() {
		gotW = append(gotW, v.GetDoubleValue())
	}
	_, without := f.colls["terms"].points[PointID("without")].payload[keyTerms]
	_, withoutW := f.colls["terms"].points[PointID("without")].payload[keyTermWeights]
	var keys []string
	for k := range p {
		keys = append(keys, k)
	}
	f.mu.Unlock()
	if !slices.Equal(gotT, []string{"$x", "a", "b.c", "metadata"}) || !slices.Equal(gotW, []float64{1, float64(float32(0.1)), 2, 3}) {
		t.Fatalf("payload terms %v weights %v, want sorted terms with their float32 weights", gotT, gotW)
	}
	if without || withoutW {
		t.Fatal("a record without terms stored term payload")
	}
	for _, k := range keys {
		if _, isTerm := terms[k]; isTerm && k != keyMetadata {
			t.Fatalf("term %q became a payload key", k)
		}
	}
	if md := p[keyMetadata]; md != nil {
		t.Fatalf("the term \"metadata\" reached the metadata payload: %v", md)
	}
	got, err := c.Get(ctx, "with")
	if err != nil || len(got.Terms) != len(terms) {
		t.Fatalf("get: %v %v", got.Terms, err)
	}
	for k, w := range terms {
		if got.Terms[k] != w {
			t.Fatalf("get: term %q weight %v, want %v", k, got.Terms[k], w)
		}
	}
	if w, _ := c.Get(ctx, "without"); w.Terms != nil {
		t.Fatalf("record without terms read back %v", w.Terms)
	}
	ms, err := c.Query(ctx, []float32{1, 0}, vectorstore.QueryOptions{K: 2})
	if err != nil || len(ms) != 2 || ms[0].Record.Terms != nil {
		t.Fatalf("query: %+v %v, want matches without terms", ms, err)
	}
	f.mu.Lock()
	ex := f.queries[len(f.queries)-1].GetWithPayload().GetExclude().GetFields()
	f.mu.Unlock()
	if !slices.Contains(ex, keyTerms) || !slices.Contains(ex, keyTermWeights) {
		t.Fatalf("query payload selector excludes %v, want the term lists", ex)
	}
	// An integer weight (a JSON number without a fraction) reads as a
	// number; anything else malformed is corruption.
	put := func(id string, extra map[string]any) {
		t.Helper()
		pl := map[string]any{"id": id, "text": "", "created_at": "2024-01-01T00:00:00.000000Z", "revision": int64(5)}
		for k, v := range extra {
			pl[k] = v
		}
		if _, err := cl.Upsert(ctx, &qc.UpsertPoints{CollectionName: "terms", Wait: qc.PtrOf(true), Points: []*qc.PointStruct{{
			Id: qc.NewIDUUID(PointID(id)), Vectors: qc.NewVectorsDense([]float32{1, 0}), Payload: qc.NewValueMap(pl),
		}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("int", map[string]any{keyTerms: []any{"x"}, keyTermWeights: []any{int64(2)}})
	if got, err := c.Get(ctx, "int"); err != nil || got.Terms["x"] != 2 {
		t.Fatalf("integer weight: %v %v", got.Terms, err)
	}
	for name, extra := range map[string]map[string]any{
		"terms-only":      {keyTerms: []any{"x"}},
		"weights-only":    {keyTermWeights: []any{1.0}},
		"lengths-differ":  {keyTerms: []any{"x", "y"}, keyTermWeights: []any{1.0}},
		"not-lists":       {keyTerms: "x", keyTermWeights: 1.0},
		"term-not-string": {keyTerms: []any{int64(3)}, keyTermWeights: []any{1.0}},
		"empty-term":      {keyTerms: []any{""}, keyTermWeights: []any{1.0}},
		"weight-string":   {keyTerms: []any{"x"}, keyTermWeights: []any{"1"}},
		"weight-negative": {keyTerms: []any{"x"}, keyTermWeights: []any{-1.0}},
		"weight-zero":     {keyTerms: []any{"x"}, keyTermWeights: []any{0.0}},
		"weight-overflow": {keyTerms: []any{"x"}, keyTermWeights: []any{1e300}},
		"duplicate-term":  {keyTerms: []any{"x", "x"}, keyTermWeights: []any{1.0, 2.0}},
	} {
		id := "bad-" + name
		put(id, extra)
		if _, err := c.Get(ctx, id); !errors.Is(err, vectorstore.ErrCorrupt) {
			t.Errorf("%s: Get = %v, want ErrCorrupt", name, err)
		}
	}
}
