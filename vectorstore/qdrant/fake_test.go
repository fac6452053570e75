package qdrant

import (
	"cmp"
	"context"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakeQdrant is a small in-memory Qdrant built on the generated gRPC server
// stubs that github.com/qdrant/go-client ships. It implements the subset of
// the Collections, Points and Qdrant services the driver uses, with
// Qdrant's documented semantics where the driver depends on them: cosine
// vectors normalised on upsert, Euclidean scores as distances (ascending),
// filters with must/should/is_empty/has_id/nested filters, keyword match,
// datetime ranges on RFC 3339 strings, integer match, conditional upserts
// (update_mode insert_only / update_only, update_filter checked against
// the stored point, atomically with the write, as Qdrant 1.17 does), order_by only on a field with a
// datetime/integer/float index, and — deliberately — equal scores and
// equal order_by values returned in point-id order, not record-id order, so
// the driver's own tie breaking is what the protocol tests observe.
//
// It exists so the driver's wire behaviour is tested through the real
// client and a real gRPC connection where no Qdrant server can run. It is
// not Qdrant: the conformance suite against a real server is
// TestConformance (STRATA_QDRANT_ADDR).
type fakeQdrant struct {
	qc.UnimplementedQdrantServer

	mu    sync.Mutex
	colls map[string]*fakeColl
	// apiKeys seen on requests, for the API key test.
	apiKeys []string
	calls   map[string]int
	// waits records the Wait flag of every write.
	waits []bool
	// deletes records every points Delete request.
	deletes []*qc.DeletePoints
	// afterScroll, when set, runs at the end of every Scroll, under mu, to
	// simulate a concurrent writer between a driver's reads and writes.
	afterScroll func(c *fakeColl)
	// delay, when set, makes every points request wait that long first (or
	// until the request's context ends), to simulate a hung server.
	delay time.Duration
	// version is what HealthCheck reports ("1.17.0" when empty).
	version string
	// upserts records every points Upsert request, queries every Query.
	upserts []*qc.UpsertPoints
	queries []*qc.QueryPoints
	// afterGet and afterUpsert, when set, run at the end of every points
	// Get / Upsert, under mu, to simulate a concurrent writer between a
	// driver's requests.
	afterGet, afterUpsert func(c *fakeColl)
}

type fakeColl struct {
	size    int
	dist    qc.Distance
	schema  map[string]qc.FieldType
	points  map[string]*fakePoint // by UUID
	created time.Time
	meta    map[string]*qc.Value // collection metadata
}

type fakePoint struct {
	id      string
	payload map[string]*qc.Value
	vector  []float32
}

func startFake(t *testing.T) (*fakeQdrant, string) {
	t.Helper()
	f, addr, stop, err := serveFake()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return f, addr
}

// serveFake starts the fake on 127.0.0.1 on a free port.
func serveFake() (*fakeQdrant, string, func(), error) {
	f := &fakeQdrant{colls: map[string]*fakeColl{}, calls: map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		f.mu.Lock()
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			f.apiKeys = append(f.apiKeys, md.Get("api-key")...)
		}
		f.calls[info.FullMethod]++
		delay := f.delay
		f.mu.Unlock()
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}
		return h(ctx, req)
	}))
	qc.RegisterQdrantServer(s, f)
	qc.RegisterCollectionsServer(s, collectionsServer{fakeQdrant: f})
	qc.RegisterPointsServer(s, pointsServer{fakeQdrant: f})
	go s.Serve(lis) //nolint:errcheck // returns when stopped
	return f, lis.Addr().String(), s.Stop, nil
}

func (f *fakeQdrant) HealthCheck(context.Context, *qc.HealthCheckRequest) (*qc.HealthCheckReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.version
	if v == "" {
		v = "1.17.0"
	}
	return &qc.HealthCheckReply{Title: "fake qdrant", Version: v}, nil
}

func (f *fakeQdrant) coll(name string) (*fakeColl, error) {
	c, ok := f.colls[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "Not found: Collection `%s` doesn't exist!", name)
	}
	return c, nil
}

func (f collectionsServer) CollectionExists(_ context.Context, r *qc.CollectionExistsRequest) (*qc.CollectionExistsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.colls[r.GetCollectionName()]
	return &qc.CollectionExistsResponse{Result: &qc.CollectionExists{Exists: ok}}, nil
}

func (f collectionsServer) Create(_ context.Context, r *qc.CreateCollection) (*qc.CollectionOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.colls[r.GetCollectionName()]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "Collection `%s` already exists!", r.GetCollectionName())
	}
	p := r.GetVectorsConfig().GetParams()
	if p == nil || p.GetSize() == 0 || p.GetDistance() == qc.Distance_UnknownDistance {
		return nil, status.Error(codes.InvalidArgument, "bad vectors config")
	}
	f.colls[r.GetCollectionName()] = &fakeColl{size: int(p.GetSize()), dist: p.GetDistance(),
		schema: map[string]qc.FieldType{}, points: map[string]*fakePoint{}, created: time.Now(), meta: r.GetMetadata()}
	return &qc.CollectionOperationResponse{Result: true}, nil
}

func (f collectionsServer) Delete(_ context.Context, r *qc.DeleteCollection) (*qc.CollectionOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.colls[r.GetCollectionName()]
	delete(f.colls, r.GetCollectionName())
	return &qc.CollectionOperationResponse{Result: ok}, nil
}

func (f collectionsServer) Get(_ context.Context, r *qc.GetCollectionInfoRequest) (*qc.GetCollectionInfoResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	schema := map[string]*qc.PayloadSchemaInfo{}
	for k, ft := range c.schema {
		schema[k] = &qc.PayloadSchemaInfo{DataType: qc.PayloadSchemaType(ft + 1)}
	}
	n := uint64(len(c.points))
	return &qc.GetCollectionInfoResponse{Result: &qc.CollectionInfo{
		Status: qc.CollectionStatus_Green, PointsCount: &n, PayloadSchema: schema,
		Config: &qc.CollectionConfig{Params: &qc.CollectionParams{ShardNumber: 1,
			VectorsConfig: qc.NewVectorsConfig(&qc.VectorParams{Size: uint64(c.size), Distance: c.dist})}, Metadata: c.meta},
	}}, nil
}

// Update merges the request's metadata into the collection's, as Qdrant
// 1.16 does; the fake keeps no other parameter.
func (f collectionsServer) Update(_ context.Context, r *qc.UpdateCollection) (*qc.CollectionOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if c.meta == nil {
		c.meta = map[string]*qc.Value{}
	}
	for k, v := range r.GetMetadata() {
		c.meta[k] = v
	}
	return &qc.CollectionOperationResponse{Result: true}, nil
}

func (f collectionsServer) List(context.Context, *qc.ListCollectionsRequest) (*qc.ListCollectionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*qc.CollectionDescription
	for name := range f.colls {
		out = append(out, &qc.CollectionDescription{Name: name})
	}
	return &qc.ListCollectionsResponse{Collections: out}, nil
}

func (f pointsServer) CreateFieldIndex(_ context.Context, r *qc.CreateFieldIndexCollection) (*qc.PointsOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if r.FieldType == nil {
		return nil, status.Error(codes.InvalidArgument, "field type required")
	}
	c.schema[r.GetFieldName()] = r.GetFieldType()
	return opOK(), nil
}

func opOK() *qc.PointsOperationResponse {
	return &qc.PointsOperationResponse{Result: &qc.UpdateResult{Status: qc.UpdateStatus_Completed}}
}

func denseIn(v *qc.Vectors) []float32 {
	vec := v.GetVector()
	if d := vec.GetDense(); d != nil {
		return d.GetData()
	}
	return vec.GetData() //nolint:staticcheck // deprecated form still accepted by Qdrant
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

func (f pointsServer) Upsert(_ context.Context, r *qc.UpsertPoints) (*qc.PointsOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waits = append(f.waits, r.GetWait())
	f.upserts = append(f.upserts, proto.Clone(r).(*qc.UpsertPoints))
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	staged := make([]*fakePoint, 0, len(r.GetPoints()))
	for _, p := range r.GetPoints() {
		id := p.GetId().GetUuid()
		if id == "" {
			return nil, status.Error(codes.InvalidArgument, "fake: only UUID ids supported")
		}
		v := slices.Clone(denseIn(p.GetVectors()))
		if len(v) != c.size {
			return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.size, len(v))
		}
		if c.dist == qc.Distance_Cosine {
			v = normalize(v)
		}
		staged = append(staged, &fakePoint{id: id, payload: clonePayload(p.GetPayload()), vector: v})
	}
	// Qdrant: insert_only leaves existing points alone, update_only never
	// inserts, and update_filter keeps every existing point that does not
	// match it as it is. The answer is the same whether or not a point was
	// written.
	for _, p := range staged {
		old, exists := c.points[p.id]
		switch r.GetUpdateMode() {
		case qc.UpdateMode_InsertOnly:
			if exists {
				continue
			}
		case qc.UpdateMode_UpdateOnly:
			if !exists {
				continue
			}
		}
		if exists && r.UpdateFilter != nil {
			ok, err := c.match(r.GetUpdateFilter(), old)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		c.points[p.id] = p
	}
	if f.afterUpsert != nil {
		f.afterUpsert(c)
	}
	return opOK(), nil
}

func clonePayload(p map[string]*qc.Value) map[string]*qc.Value {
	out := make(map[string]*qc.Value, len(p))
	for k, v := range p {
		out[k] = proto.Clone(v).(*qc.Value)
	}
	return out
}

func (f *fakeQdrant) PointsDelete(c *fakeColl, sel *qc.PointsSelector) error {
	if ids := sel.GetPoints(); ids != nil {
		for _, id := range ids.GetIds() {
			delete(c.points, id.GetUuid())
		}
		return nil
	}
	flt := sel.GetFilter()
	for id, p := range c.points {
		ok, err := c.match(flt, p)
		if err != nil {
			return err
		}
		if ok {
			delete(c.points, id)
		}
	}
	return nil
}

// The collections and points services share Go method names (Get,
// Delete), so each is served by its own adapter over the shared state.
type collectionsServer struct {
	qc.UnimplementedCollectionsServer
	*fakeQdrant
}

type pointsServer struct {
	qc.UnimplementedPointsServer
	*fakeQdrant
}

func (s pointsServer) Delete(_ context.Context, r *qc.DeletePoints) (*qc.PointsOperationResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, r.GetWait())
	s.deletes = append(s.deletes, proto.Clone(r).(*qc.DeletePoints))
	c, err := s.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	if err := s.PointsDelete(c, r.GetPoints()); err != nil {
		return nil, err
	}
	return opOK(), nil
}

func (s pointsServer) Get(_ context.Context, r *qc.GetPoints) (*qc.GetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	var out []*qc.RetrievedPoint
	for _, id := range r.GetIds() {
		if p, ok := c.points[id.GetUuid()]; ok {
			out = append(out, p.retrieved(r.GetWithPayload(), r.GetWithVectors()))
		}
	}
	if s.afterGet != nil {
		s.afterGet(c)
	}
	return &qc.GetResponse{Result: out}, nil
}

// payloadOut is the payload a request selects: all of it (enable),
// none, or all but some top-level keys (exclude); the driver uses
// nothing else.
func payloadOut(sel *qc.WithPayloadSelector, p map[string]*qc.Value) map[string]*qc.Value {
	if ex := sel.GetExclude(); ex != nil {
		out := clonePayload(p)
		for _, k := range ex.GetFields() {
			delete(out, k)
		}
		return out
	}
	if sel.GetEnable() {
		return clonePayload(p)
	}
	return nil
}

func wantVectors(sel *qc.WithVectorsSelector) bool { return sel.GetEnable() }

func (p *fakePoint) vectorsOut() *qc.VectorsOutput {
	return &qc.VectorsOutput{VectorsOptions: &qc.VectorsOutput_Vector{Vector: &qc.VectorOutput{
		Vector: &qc.VectorOutput_Dense{Dense: &qc.DenseVector{Data: slices.Clone(p.vector)}}}}}
}

func (p *fakePoint) retrieved(wp *qc.WithPayloadSelector, wv *qc.WithVectorsSelector) *qc.RetrievedPoint {
	rp := &qc.RetrievedPoint{Id: qc.NewIDUUID(p.id)}
	rp.Payload = payloadOut(wp, p.payload)
	if wantVectors(wv) {
		rp.Vectors = p.vectorsOut()
	}
	return rp
}

// lookup resolves a dotted payload path.
func lookup(p map[string]*qc.Value, key string) (*qc.Value, bool) {
	parts := strings.Split(key, ".")
	cur := p
	for i, part := range parts {
		v, ok := cur[part]
		if !ok {
			return nil, false
		}
		if i == len(parts)-1 {
			return v, true
		}
		st := v.GetStructValue()
		if st == nil {
			return nil, false
		}
		cur = st.GetFields()
	}
	return nil, false
}

func (c *fakeColl) match(f *qc.Filter, p *fakePoint) (bool, error) {
	if f == nil {
		return true, nil
	}
	for _, cond := range f.GetMust() {
		ok, err := c.cond(cond, p)
		if err != nil || !ok {
			return false, err
		}
	}
	for _, cond := range f.GetMustNot() {
		ok, err := c.cond(cond, p)
		if err != nil || ok {
			return false, err
		}
	}
	if len(f.GetShould()) > 0 {
		for _, cond := range f.GetShould() {
			ok, err := c.cond(cond, p)
			if err != nil {
				return false, err
			}
			if ok {
				return true, nil
			}
		}
		return false, nil
	}
	return true, nil
}

func (c *fakeColl) cond(cond *qc.Condition, p *fakePoint) (bool, error) {
	switch x := cond.GetConditionOneOf().(type) {
	case *qc.Condition_Filter:
		return c.match(x.Filter, p)
	case *qc.Condition_HasId:
		for _, id := range x.HasId.GetHasId() {
			if id.GetUuid() == p.id {
				return true, nil
			}
		}
		return false, nil
	case *qc.Condition_IsEmpty:
		v, ok := lookup(p.payload, x.IsEmpty.GetKey())
		// Qdrant: empty means missing, null or an empty array.
		return !ok || isNull(v) || v.GetListValue() != nil && len(v.GetListValue().GetValues()) == 0, nil
	case *qc.Condition_Field:
		fc := x.Field
		v, ok := lookup(p.payload, fc.GetKey())
		switch {
		case fc.GetMatch() != nil:
			switch m := fc.GetMatch().GetMatchValue().(type) {
			case *qc.Match_Keyword:
				return ok && v.GetStringValue() == m.Keyword && isString(v), nil
			case *qc.Match_Integer:
				n, isInt := v.GetKind().(*qc.Value_IntegerValue)
				return ok && isInt && n.IntegerValue == m.Integer, nil
			}
			return false, status.Error(codes.Unimplemented, "fake: only keyword and integer match")
		case fc.GetDatetimeRange() != nil:
			if !ok || !isString(v) {
				return false, nil
			}
			t, err := time.Parse(time.RFC3339Nano, v.GetStringValue())
			if err != nil {
				return false, nil // Qdrant: a value of the wrong type does not satisfy the condition
			}
			r := fc.GetDatetimeRange()
			// Qdrant's datetime index keeps microseconds.
			t = t.Truncate(time.Microsecond)
			if r.Lt != nil && !t.Before(r.Lt.AsTime()) || r.Lte != nil && t.After(r.Lte.AsTime()) ||
				r.Gt != nil && !t.After(r.Gt.AsTime()) || r.Gte != nil && t.Before(r.Gte.AsTime()) {
				return false, nil
			}
			return true, nil
		}
		return false, status.Error(codes.Unimplemented, "fake: unsupported field condition")
	}
	return false, status.Error(codes.Unimplemented, "fake: unsupported condition")
}

func isString(v *qc.Value) bool { _, ok := v.GetKind().(*qc.Value_StringValue); return ok }
func isNull(v *qc.Value) bool   { _, ok := v.GetKind().(*qc.Value_NullValue); return ok }

func (c *fakeColl) filtered(f *qc.Filter) ([]*fakePoint, error) {
	var out []*fakePoint
	for _, p := range c.points {
		ok, err := c.match(f, p)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, p)
		}
	}
	// Point-id order, as Qdrant scrolls.
	slices.SortFunc(out, func(a, b *fakePoint) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

func (s pointsServer) Count(_ context.Context, r *qc.CountPoints) (*qc.CountResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	pts, err := c.filtered(r.GetFilter())
	if err != nil {
		return nil, err
	}
	return &qc.CountResponse{Result: &qc.CountResult{Count: uint64(len(pts))}}, nil
}

func (s pointsServer) Scroll(_ context.Context, r *qc.ScrollPoints) (*qc.ScrollResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	pts, err := c.filtered(r.GetFilter())
	if err != nil {
		return nil, err
	}
	limit := int(r.GetLimit())
	if r.Limit == nil {
		limit = 10
	}
	if ob := r.GetOrderBy(); ob != nil {
		if r.Offset != nil {
			return nil, status.Error(codes.InvalidArgument, "Bad request: offset is not supported with order_by")
		}
		if ft, ok := c.schema[ob.GetKey()]; !ok || ft != qc.FieldType_FieldTypeDatetime {
			return nil, status.Errorf(codes.InvalidArgument, "Bad request: No range index for `order_by` key: `%s`", ob.GetKey())
		}
		keyOf := func(p *fakePoint) time.Time {
			v, _ := lookup(p.payload, ob.GetKey())
			t, _ := time.Parse(time.RFC3339Nano, v.GetStringValue())
			return t
		}
		// Stable on point-id order: equal values come back in id order.
		slices.SortStableFunc(pts, func(a, b *fakePoint) int {
			c := keyOf(a).Compare(keyOf(b))
			if ob.GetDirection() == qc.Direction_Desc {
				c = -c
			}
			return c
		})
		if len(pts) > limit {
			pts = pts[:limit]
		}
		out := make([]*qc.RetrievedPoint, len(pts))
		for i, p := range pts {
			out[i] = p.retrieved(r.GetWithPayload(), r.GetWithVectors())
		}
		return &qc.ScrollResponse{Result: out}, nil
	}
	start := 0
	if off := r.GetOffset(); off != nil {
		start, _ = slices.BinarySearchFunc(pts, off.GetUuid(), func(p *fakePoint, id string) int { return cmp.Compare(p.id, id) })
	}
	pts = pts[start:]
	var next *qc.PointId
	if len(pts) > limit {
		next = qc.NewIDUUID(pts[limit].id)
		pts = pts[:limit]
	}
	out := make([]*qc.RetrievedPoint, len(pts))
	for i, p := range pts {
		out[i] = p.retrieved(r.GetWithPayload(), r.GetWithVectors())
	}
	if s.afterScroll != nil {
		s.afterScroll(c)
	}
	return &qc.ScrollResponse{Result: out, NextPageOffset: next}, nil
}

func (s pointsServer) Query(_ context.Context, r *qc.QueryPoints) (*qc.QueryResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, proto.Clone(r).(*qc.QueryPoints))
	c, err := s.coll(r.GetCollectionName())
	if err != nil {
		return nil, err
	}
	q := r.GetQuery().GetNearest().GetDense().GetData()
	if len(q) != c.size {
		return nil, status.Errorf(codes.InvalidArgument, "Wrong input: Vector dimension error: expected dim: %d, got %d", c.size, len(q))
	}
	if c.dist == qc.Distance_Cosine {
		q = normalize(q)
	}
	pts, err := c.filtered(r.GetFilter())
	if err != nil {
		return nil, err
	}
	type scored struct {
		p *fakePoint
		s float32
	}
	res := make([]scored, len(pts))
	for i, p := range pts {
		var s float32
		switch c.dist {
		case qc.Distance_Euclid:
			for j := range q {
				d := q[j] - p.vector[j]
				s += d * d
			}
			s = float32(math.Sqrt(float64(s)))
		default:
			for j := range q {
				s += q[j] * p.vector[j]
			}
		}
		res[i] = scored{p, s}
	}
	// Best first; equal scores stay in point-id order.
	slices.SortStableFunc(res, func(a, b scored) int {
		if c.dist == qc.Distance_Euclid {
			return cmp.Compare(a.s, b.s)
		}
		return cmp.Compare(b.s, a.s)
	})
	limit := int(r.GetLimit())
	if r.Limit == nil {
		limit = 10
	}
	if len(res) > limit {
		res = res[:limit]
	}
	out := make([]*qc.ScoredPoint, len(res))
	for i, x := range res {
		sp := &qc.ScoredPoint{Id: qc.NewIDUUID(x.p.id), Score: x.s}
		sp.Payload = payloadOut(r.GetWithPayload(), x.p.payload)
		if wantVectors(r.GetWithVectors()) {
			sp.Vectors = x.p.vectorsOut()
		}
		out[i] = sp
	}
	return &qc.QueryResponse{Result: out}, nil
}
