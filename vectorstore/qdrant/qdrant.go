package qdrant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/stratamem/strata/internal/ctxutil"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/driver"
	"github.com/stratamem/strata/vectorstore/internal/driverutil"
)

// Payload keys. Record fields are top-level payload keys; user metadata is
// the nested object "metadata", so a metadata filter is the path
// "metadata.<key>" (metadata keys cannot contain '.', the path separator).
const (
	keyID        = "id"
	keyLayer     = "layer"
	keyKind      = "kind"
	keyThread    = "thread"
	keyResource  = "resource"
	keyText      = "text"
	keyMetadata  = "metadata"
	keyCreatedAt = "created_at"
	keyValidFrom = "valid_from"
	keyValidTo   = "valid_to"
	// keyRevision holds the record's revision (an integer), keyWrites the
	// random tokens of the last conditional writes of the point, newest
	// first (see UpsertIf).
	keyRevision = "revision"
	keyWrites   = "writes"
	// keyTerms and keyTermWeights hold the record's lexical document as
	// two parallel lists, the terms in sorted order and their weights:
	// a term may contain '.' or any other character, so it is a value,
	// never a payload key. Neither is indexed; term search ranks in
	// process (see the package documentation).
	keyTerms       = "terms"
	keyTermWeights = "term_weights"
)

// writeHistory bounds the tokens a point keeps in keyWrites.
const writeHistory = 32

// ErrNoConditionalWrites is returned by UpsertIf and DeleteIf when the
// server is older than Qdrant 1.17, which introduced the update mode the
// conditional writes need: an older server ignores the request fields it
// does not know and would write unconditionally.
var ErrNoConditionalWrites = errors.New("qdrant: conditional writes need Qdrant 1.17 or later")

// timeLayout writes times as RFC 3339 in UTC with exactly six fractional
// digits: Qdrant's datetime index keeps microseconds, the vectorstore
// precision, so range filters and ordering on these fields are exact.
const timeLayout = "2006-01-02T15:04:05.000000Z07:00"

// idNamespace derives point ids: Qdrant ids must be unsigned integers or
// UUIDs, so a record id maps to the UUIDv5 of this namespace and the id, and
// the original id is kept in the payload.
var idNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/stratamem/strata/vectorstore/qdrant"))

// PointID returns the Qdrant point UUID of a record id.
func PointID(recordID string) string {
	return uuid.NewSHA1(idNamespace, []byte(recordID)).String()
}

// upsertChunk bounds the points per Upsert request so a large batch stays
// well under gRPC message limits.
const upsertChunk = 256

// DefaultTimeout is the default of Options.Timeout.
const DefaultTimeout = 30 * time.Second

// Options configure a Qdrant collection: the portable options
// (vectorstore.Options, embedded) and the driver's own. The zero value is
// useful.
type Options struct {
	// Options are the portable options: dimension, distance, metadata
	// keys, clock. The URL opener does not read them (vectorstore.Open
	// takes them from the URL and its own opts argument).
	vectorstore.Options

	// Exact makes every query an exact (brute force) search instead of an
	// HNSW search. Qdrant searches small collections exactly anyway; set it
	// when exact top-k matters more than latency on large ones.
	Exact bool
	// CloseClient makes Close also close the client (set when the driver
	// created the client itself, as Open by URL does).
	CloseClient bool
	// Timeout bounds each driver call (the open included) whose context
	// has no deadline, so a hung server cannot block a caller forever; a
	// call that hits it fails with an error matching
	// context.DeadlineExceeded. 0 means DefaultTimeout (30 s), negative
	// means no bound beyond ctx. URL parameter: timeout=10s.
	Timeout time.Duration
}

// OpenCollection opens, creating if needed, the Qdrant collection name
// through client and wraps it in the portable type. opts may be nil.
func OpenCollection(ctx context.Context, client *qc.Client, name string, opts *Options) (*vectorstore.Collection, error) {
	o := *cmp.Or(opts, &Options{})
	d, err := openDriver(ctx, client, vectorstore.DriverConfig(name, &o.Options), &o)
	return vectorstore.WrapOpened(d, err, &o.Options)
}

type collection struct {
	cl      *qc.Client
	info    driver.Info
	exact   bool
	owns    bool
	timeout time.Duration // Options.Timeout with the default applied

	revMu   sync.Mutex
	lastRev int64 // the last revision this handle handed out

	verMu  sync.Mutex
	verOK  bool  // the server supports conditional writes
	verErr error // it does not (permanent, unlike a failed health check)
}

// nextRevision returns a revision greater than floor and than every
// revision this handle handed out: the current time in microseconds,
// pushed up when the clock is behind. Qdrant has no counter a write could
// draw from atomically, so the clock stands in for one across handles and
// processes: see the package documentation for what that guarantees.
func (c *collection) nextRevision(floor int64) int64 {
	c.revMu.Lock()
	defer c.revMu.Unlock()
	c.lastRev = max(time.Now().UnixMicro(), c.lastRev+1, floor+1)
	return c.lastRev
}

// bound applies Options.Timeout to a context without a deadline.
func (c *collection) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctxutil.Bound(ctx, c.timeout)
}

// withCtx adds the context's error to err when the context ended (the
// caller's deadline or cancellation, or Options.Timeout): the client
// reports it as a gRPC status, which errors.Is cannot match with
// context.DeadlineExceeded or context.Canceled. A DeadlineExceeded status
// counts as the deadline even when ctx does not show it yet: the deadline
// travels to the server, which can give up a moment before the client.
func withCtx(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.DeadlineExceeded {
			cerr = context.DeadlineExceeded
		}
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

// qerr wraps an error of a client call made under ctx.
func qerr(ctx context.Context, err error) error {
	return withCtx(ctx, fmt.Errorf("qdrant: %w", err))
}

var toQdrant = map[driver.Distance]qc.Distance{
	driver.DistanceCosine:    qc.Distance_Cosine,
	driver.DistanceDot:       qc.Distance_Dot,
	driver.DistanceEuclidean: qc.Distance_Euclid,
}

// openDriver opens the driver-level collection cfg.Name: it creates the
// collection (one unnamed dense vector of cfg.Dimension with cfg.Distance)
// if it does not exist, checks dimension and distance if it does, and
// creates the payload indexes the filters use (keyword: layer, kind, thread,
// resource and metadata.<k> for cfg.MetadataKeys; datetime: created_at,
// valid_from, valid_to).
func openDriver(ctx context.Context, client *qc.Client, cfg driver.Config, qopts *Options) (driver.Collection, error) {
	const op = "open"
	if client == nil {
		return nil, driver.Errorf(driver.CodeInvalidArgument, op, "client", "nil qdrant client")
	}
	var o Options
	if qopts != nil {
		o = *qopts
	}
	if cfg.Name == "" {
		return nil, driver.Errorf(driver.CodeInvalidArgument, op, "collection", "empty collection name")
	}
	// "" is cosine for creation and accepts any stored distance; aliases
	// ("l2", "ip", "Cosine") map to their canonical distance.
	dist, err := driver.ParseDistance(string(cfg.Distance))
	if err != nil {
		return nil, err
	}
	if cfg.Distance != "" {
		cfg.Distance = dist
	}
	qd, ok := toQdrant[dist]
	if !ok {
		return nil, driver.Errorf(driver.CodeInvalidArgument, op, "distance", "unknown distance %q", cfg.Distance)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	c := &collection{cl: client, exact: o.Exact, owns: o.CloseClient, timeout: o.Timeout,
		info: driver.Info{Name: cfg.Name, Driver: "qdrant"}}
	ctx, cancel := c.bound(ctx)
	defer cancel()

	exists, err := client.CollectionExists(ctx, cfg.Name)
	if err != nil {
		return nil, withCtx(ctx, fmt.Errorf("qdrant: collection exists %q: %w", cfg.Name, err))
	}
	if !exists {
		if cfg.Dimension == 0 {
			return nil, driver.Errorf(driver.CodeInvalidArgument, op, "dimension", "collection %q does not exist; a dimension is required to create it", cfg.Name)
		}
		err := client.CreateCollection(ctx, &qc.CreateCollection{
			CollectionName: cfg.Name,
			VectorsConfig:  qc.NewVectorsConfig(&qc.VectorParams{Size: uint64(cfg.Dimension), Distance: qd}),
		})
		// Another process may have created it between the check and here.
		if err != nil && status.Code(errors.Unwrap(err)) != codes.AlreadyExists && status.Code(err) != codes.AlreadyExists {
			return nil, withCtx(ctx, fmt.Errorf("qdrant: create collection %q: %w", cfg.Name, err))
		}
	}
	info, err := client.GetCollectionInfo(ctx, cfg.Name)
	if err != nil {
		return nil, withCtx(ctx, fmt.Errorf("qdrant: collection info %q: %w", cfg.Name, err))
	}
	params := info.GetConfig().GetParams().GetVectorsConfig().GetParams()
	if params == nil {
		return nil, driver.Errorf(driver.CodeConfigMismatch, op, "vectors", "collection %q has no single unnamed dense vector", cfg.Name)
	}
	if cfg.Dimension != 0 && uint64(cfg.Dimension) != params.GetSize() {
		return nil, driver.Errorf(driver.CodeConfigMismatch, op, "dimension", "collection %q has dimension %d, opened with %d", cfg.Name, params.GetSize(), cfg.Dimension)
	}
	if cfg.Distance != "" && params.GetDistance() != qd {
		return nil, driver.Errorf(driver.CodeConfigMismatch, op, "distance", "collection %q has distance %s, opened with %s", cfg.Name, params.GetDistance(), cfg.Distance)
	}
	c.info.Dimension = int(params.GetSize())
	for d, q := range toQdrant {
		if q == params.GetDistance() {
			c.info.Distance = d
		}
	}
	if _, known := toQdrant[c.info.Distance]; !known || c.info.Distance == "" {
		return nil, driver.Errorf(driver.CodeConfigMismatch, op, "distance", "collection %q uses distance %s, which vectorstore does not support", cfg.Name, params.GetDistance())
	}

	want := map[string]qc.FieldType{
		// revision: conditional writes filter on it (a server in strict
		// mode refuses filtered updates on unindexed fields).
		keyRevision: qc.FieldType_FieldTypeInteger,
		keyLayer:    qc.FieldType_FieldTypeKeyword, keyKind: qc.FieldType_FieldTypeKeyword,
		keyThread: qc.FieldType_FieldTypeKeyword, keyResource: qc.FieldType_FieldTypeKeyword,
		keyCreatedAt: qc.FieldType_FieldTypeDatetime, keyValidFrom: qc.FieldType_FieldTypeDatetime,
		keyValidTo: qc.FieldType_FieldTypeDatetime,
	}
	for _, k := range cfg.MetadataKeys {
		want[keyMetadata+"."+k] = qc.FieldType_FieldTypeKeyword
	}
	have := info.GetPayloadSchema()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := have[k]; ok {
			continue
		}
		ft := want[k]
		if _, err := client.CreateFieldIndex(ctx, &qc.CreateFieldIndexCollection{
			CollectionName: cfg.Name, Wait: qc.PtrOf(true), FieldName: k, FieldType: &ft,
		}); err != nil {
			return nil, withCtx(ctx, fmt.Errorf("qdrant: create payload index %q on %q: %w", k, cfg.Name, err))
		}
	}
	return c, nil
}

func (c *collection) Info() driver.Info { return c.info }

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// toPoint encodes r with revision rev and, for a conditional write, the
// write tokens of the point (nil for a plain Upsert, which keeps none).
func toPoint(r *driver.Record, rev int64, writes []int64) *qc.PointStruct {
	p := map[string]*qc.Value{
		keyID:        qc.NewValueString(r.ID),
		keyText:      qc.NewValueString(r.Text),
		keyCreatedAt: qc.NewValueString(fmtTime(r.CreatedAt)),
		keyRevision:  qc.NewValueInt(rev),
	}
	if len(writes) > 0 {
		vs := make([]*qc.Value, len(writes))
		for i, w := range writes {
			vs[i] = qc.NewValueInt(w)
		}
		p[keyWrites] = qc.NewValueFromList(vs...)
	}
	// Empty fields are left out: filter values are never empty, and a
	// missing valid_from / valid_to is what "unbounded" means in filters.
	for k, v := range map[string]string{keyLayer: r.Layer, keyKind: r.Kind, keyThread: r.Scope.Thread, keyResource: r.Scope.Resource} {
		if v != "" {
			p[k] = qc.NewValueString(v)
		}
	}
	if len(r.Metadata) > 0 {
		md := make(map[string]*qc.Value, len(r.Metadata))
		for k, v := range r.Metadata {
			md[k] = qc.NewValueString(v)
		}
		p[keyMetadata] = qc.NewValueFromFields(md)
	}
	if len(r.Terms) > 0 {
		terms := make([]string, 0, len(r.Terms))
		for t := range r.Terms {
			terms = append(terms, t)
		}
		slices.Sort(terms)
		ts := make([]*qc.Value, len(terms))
		ws := make([]*qc.Value, len(terms))
		for i, t := range terms {
			ts[i] = qc.NewValueString(t)
			ws[i] = qc.NewValueDouble(float64(r.Terms[t]))
		}
		p[keyTerms] = qc.NewValueFromList(ts...)
		p[keyTermWeights] = qc.NewValueFromList(ws...)
	}
	if !r.ValidFrom.IsZero() {
		p[keyValidFrom] = qc.NewValueString(fmtTime(r.ValidFrom))
	}
	if !r.ValidTo.IsZero() {
		p[keyValidTo] = qc.NewValueString(fmtTime(r.ValidTo))
	}
	return &qc.PointStruct{Id: qc.NewIDUUID(PointID(r.ID)), Payload: p, Vectors: qc.NewVectorsDense(r.Vector)}
}

func corrupt(format string, args ...any) error {
	return driver.Errorf(driver.CodeCorrupt, "read", "", format, args...)
}

// fromPayload decodes a point written by toPoint.
func fromPayload(p map[string]*qc.Value, vec *qc.VectorsOutput) (driver.Record, error) {
	var r driver.Record
	str := func(k string) (string, error) {
		v, ok := p[k]
		if !ok {
			return "", nil
		}
		s, ok := v.GetKind().(*qc.Value_StringValue)
		if !ok {
			return "", corrupt("payload field %q is not a string", k)
		}
		return s.StringValue, nil
	}
	tm := func(k string) (time.Time, error) {
		s, err := str(k)
		if err != nil || s == "" {
			return time.Time{}, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, corrupt("payload field %q: %v", k, err)
		}
		return t.UTC(), nil
	}
	var err error
	for _, f := range []struct {
		k   string
		dst *string
	}{{keyID, &r.ID}, {keyLayer, &r.Layer}, {keyKind, &r.Kind}, {keyThread, &r.Scope.Thread}, {keyResource, &r.Scope.Resource}, {keyText, &r.Text}} {
		if *f.dst, err = str(f.k); err != nil {
			return r, err
		}
	}
	if r.ID == "" {
		return r, corrupt("point has no %q payload: not written by strata", keyID)
	}
	if r.CreatedAt, err = tm(keyCreatedAt); err != nil {
		return r, err
	}
	if r.ValidFrom, err = tm(keyValidFrom); err != nil {
		return r, err
	}
	if r.ValidTo, err = tm(keyValidTo); err != nil {
		return r, err
	}
	if r.Revision, err = revisionOf(p); err != nil {
		return r, err
	}
	if v, ok := p[keyMetadata]; ok {
		st := v.GetStructValue()
		if st == nil {
			return r, corrupt("payload field %q is not an object", keyMetadata)
		}
		if len(st.GetFields()) > 0 {
			r.Metadata = make(map[string]string, len(st.GetFields()))
			for k, mv := range st.GetFields() {
				s, ok := mv.GetKind().(*qc.Value_StringValue)
				if !ok {
					return r, corrupt("metadata %q is not a string", k)
				}
				r.Metadata[k] = s.StringValue
			}
		}
	}
	if r.Terms, err = termsOf(p); err != nil {
		return r, err
	}
	if vec != nil {
		if d := vec.GetVector().GetDenseVector(); d != nil {
			r.Vector = slices.Clone(d.GetData())
		}
	}
	return r, nil
}

// termsOf decodes the lexical document of a payload written by toPoint
// (nil when it has none).
func termsOf(p map[string]*qc.Value) (driver.Terms, error) {
	tv, hasT := p[keyTerms]
	wv, hasW := p[keyTermWeights]
	if !hasT && !hasW {
		return nil, nil
	}
	ts, ws := tv.GetListValue(), wv.GetListValue()
	if ts == nil || ws == nil {
		return nil, corrupt("payload fields %q and %q are not both lists", keyTerms, keyTermWeights)
	}
	if len(ts.GetValues()) != len(ws.GetValues()) {
		return nil, corrupt("payload holds %d terms and %d term weights", len(ts.GetValues()), len(ws.GetValues()))
	}
	if len(ts.GetValues()) == 0 {
		return nil, nil
	}
	out := make(driver.Terms, len(ts.GetValues()))
	for i, v := range ts.GetValues() {
		t, ok := v.GetKind().(*qc.Value_StringValue)
		if !ok || t.StringValue == "" {
			return nil, corrupt("term %d is not a non-empty string", i)
		}
		var w float64
		switch x := ws.GetValues()[i].GetKind().(type) {
		case *qc.Value_DoubleValue:
			w = x.DoubleValue
		case *qc.Value_IntegerValue: // a JSON number without a fraction
			w = float64(x.IntegerValue)
		default:
			return nil, corrupt("weight of term %q is not a number", t.StringValue)
		}
		f := float32(w)
		if !(f > 0) || math.IsInf(float64(f), 0) {
			return nil, corrupt("weight of term %q is %v, not finite and > 0", t.StringValue, w)
		}
		if _, dup := out[t.StringValue]; dup {
			return nil, corrupt("term %q stored twice", t.StringValue)
		}
		out[t.StringValue] = f
	}
	return out, nil
}

// revisionOf reads the revision of a payload. Points written before
// revisions existed have none and count as revision 1, which no write
// stores any more (nextRevision returns clock values).
func revisionOf(p map[string]*qc.Value) (int64, error) {
	v, ok := p[keyRevision]
	if !ok {
		return 1, nil
	}
	n, ok := v.GetKind().(*qc.Value_IntegerValue)
	if !ok || n.IntegerValue <= 0 {
		return 0, corrupt("payload field %q is not a positive integer", keyRevision)
	}
	return n.IntegerValue, nil
}

// writesOf reads the write tokens of a payload.
func writesOf(p map[string]*qc.Value) []int64 {
	var out []int64
	for _, v := range p[keyWrites].GetListValue().GetValues() {
		if n, ok := v.GetKind().(*qc.Value_IntegerValue); ok {
			out = append(out, n.IntegerValue)
		}
	}
	return out
}

// atRevision is the condition "the point is at revision rev"; a point
// without a revision is at revision 1.
func atRevision(rev int64) *qc.Condition {
	if rev == 1 {
		return qc.NewFilterAsCondition(&qc.Filter{Should: []*qc.Condition{qc.NewMatchInt(keyRevision, 1), qc.NewIsEmpty(keyRevision)}})
	}
	return qc.NewMatchInt(keyRevision, rev)
}

func keyword(k, v string) *qc.Condition { return qc.NewMatchKeyword(k, v) }

func dtRange(k string, r *qc.DatetimeRange) *qc.Condition {
	return &qc.Condition{ConditionOneOf: &qc.Condition_Field{Field: &qc.FieldCondition{Key: k, DatetimeRange: r}}}
}

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// conditions translates a Filter into Qdrant "must" conditions.
func conditions(f *driver.Filter) []*qc.Condition {
	var must []*qc.Condition
	if len(f.IDs) > 0 {
		ids := make([]*qc.PointId, len(f.IDs))
		for i, id := range f.IDs {
			ids[i] = qc.NewIDUUID(PointID(id))
		}
		must = append(must, qc.NewHasID(ids...))
	}
	for _, kv := range [...][2]string{{keyLayer, f.Layer}, {keyKind, f.Kind}, {keyThread, f.Thread}, {keyResource, f.Resource}} {
		if kv[1] != "" {
			must = append(must, keyword(kv[0], kv[1]))
		}
	}
	mk := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		mk = append(mk, k)
	}
	slices.Sort(mk)
	for _, k := range mk {
		must = append(must, keyword(keyMetadata+"."+k, f.Metadata[k]))
	}
	if !f.CreatedFrom.IsZero() || !f.CreatedBefore.IsZero() {
		r := &qc.DatetimeRange{}
		if !f.CreatedFrom.IsZero() {
			r.Gte = ts(f.CreatedFrom)
		}
		if !f.CreatedBefore.IsZero() {
			r.Lt = ts(f.CreatedBefore)
		}
		must = append(must, dtRange(keyCreatedAt, r))
	}
	if !f.ValidAt.IsZero() {
		// (no valid_from or valid_from <= t) and (no valid_to or t < valid_to)
		must = append(must,
			qc.NewFilterAsCondition(&qc.Filter{Should: []*qc.Condition{qc.NewIsEmpty(keyValidFrom), dtRange(keyValidFrom, &qc.DatetimeRange{Lte: ts(f.ValidAt)})}}),
			qc.NewFilterAsCondition(&qc.Filter{Should: []*qc.Condition{qc.NewIsEmpty(keyValidTo), dtRange(keyValidTo, &qc.DatetimeRange{Gt: ts(f.ValidAt)})}}),
		)
	}
	return must
}

func filterOf(must []*qc.Condition) *qc.Filter {
	if len(must) == 0 {
		return nil
	}
	return &qc.Filter{Must: must}
}

func (c *collection) Upsert(ctx context.Context, recs []driver.Record) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	for i := 0; i < len(recs); i += upsertChunk {
		chunk := recs[i:min(i+upsertChunk, len(recs))]
		pts := make([]*qc.PointStruct, len(chunk))
		for j := range chunk {
			pts[j] = toPoint(&chunk[j], c.nextRevision(0), nil)
		}
		// Wait: the call returns once the points are applied and in
		// Qdrant's write-ahead log, which is what "acknowledged" means here.
		if _, err := c.cl.Upsert(ctx, &qc.UpsertPoints{CollectionName: c.info.Name, Wait: qc.PtrOf(true), Points: pts}); err != nil {
			return qerr(ctx, err)
		}
	}
	return nil
}

// strong orders the writes of conditional operations through the shard's
// permanent leader, and majority reads what a majority of replicas hold,
// so that on a replicated collection the check, the write and the read
// back see one history. A single node ignores both.
var (
	strong   = &qc.WriteOrdering{Type: qc.WriteOrderingType_Strong}
	majority = &qc.ReadConsistency{Value: &qc.ReadConsistency_Type{Type: qc.ReadConsistencyType_Majority}}
)

// checkConditional refuses conditional writes on a server older than
// 1.17. The answer is cached once known; a failed health check is not.
func (c *collection) checkConditional(ctx context.Context) error {
	c.verMu.Lock()
	defer c.verMu.Unlock()
	if c.verOK || c.verErr != nil {
		return c.verErr
	}
	h, err := c.cl.HealthCheck(ctx)
	if err != nil {
		return qerr(ctx, err)
	}
	if !versionAtLeast(h.GetVersion(), 1, 17) {
		c.verErr = fmt.Errorf("%w (server reports version %q)", ErrNoConditionalWrites, h.GetVersion())
		return c.verErr
	}
	c.verOK = true
	return nil
}

// versionAtLeast reports whether v ("1.17.0", "v1.17.1-dev") is at least
// major.minor; an unparsable version is not.
func versionAtLeast(v string, major, minor int) bool {
	return driverutil.VersionAtLeast(strings.TrimPrefix(v, "v"), major, minor)
}

// current returns the payload of id's point (nil if there is none), read
// with majority consistency.
func (c *collection) current(ctx context.Context, id string) (map[string]*qc.Value, error) {
	pts, err := c.cl.Get(ctx, &qc.GetPoints{
		CollectionName: c.info.Name, Ids: []*qc.PointId{qc.NewIDUUID(PointID(id))},
		WithPayload: qc.NewWithPayload(true), WithVectors: qc.NewWithVectors(false), ReadConsistency: majority,
	})
	if err != nil {
		return nil, qerr(ctx, err)
	}
	if len(pts) == 0 {
		return nil, nil
	}
	p := pts[0].GetPayload()
	if p == nil {
		p = map[string]*qc.Value{}
	}
	return p, nil
}

// UpsertIf is a conditional upsert: update_mode insert_only when expected
// is 0, else update_only with update_filter revision = expected. Qdrant
// applies the filter and the write as one operation of the shard, so the
// write is atomic; but its answer does not say whether the point was
// written or left alone. Hence the read before (a mismatch fails early,
// and gives the write tokens to carry on) and the read after: the write
// happened if and only if its random token is in the point's last
// writeHistory tokens. See the package documentation for the cases this
// cannot decide.
func (c *collection) UpsertIf(ctx context.Context, rec driver.Record, expected int64) (int64, error) {
	const op = "upsert if"
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := c.checkConditional(ctx); err != nil {
		return 0, err
	}
	before, err := c.current(ctx, rec.ID)
	if err != nil {
		return 0, err
	}
	var cur int64
	if before != nil {
		if cur, err = revisionOf(before); err != nil {
			return 0, err
		}
	}
	if cur != expected {
		return 0, driver.Conflict(op, rec.ID, expected, cur)
	}
	token := rand.Int64()
	writes := append([]int64{token}, writesOf(before)...)
	writes = writes[:min(len(writes), writeHistory)]
	rev := c.nextRevision(expected)
	req := &qc.UpsertPoints{CollectionName: c.info.Name, Wait: qc.PtrOf(true), Ordering: strong,
		Points: []*qc.PointStruct{toPoint(&rec, rev, writes)}}
	if expected == 0 {
		req.UpdateMode = qc.UpdateMode_InsertOnly.Enum()
	} else {
		req.UpdateMode = qc.UpdateMode_UpdateOnly.Enum()
		req.UpdateFilter = &qc.Filter{Must: []*qc.Condition{atRevision(expected)}}
	}
	if _, err := c.cl.Upsert(ctx, req); err != nil {
		return 0, qerr(ctx, err)
	}
	after, err := c.current(ctx, rec.ID)
	if err != nil {
		return 0, fmt.Errorf("qdrant: upsert if %q: the write was sent but its outcome is unknown: %w", rec.ID, err)
	}
	if after == nil {
		return 0, driver.Conflict(op, rec.ID, expected, 0)
	}
	if slices.Contains(writesOf(after), token) {
		return rev, nil
	}
	now, err := revisionOf(after)
	if err != nil {
		return 0, err
	}
	return 0, driver.Conflict(op, rec.ID, expected, now)
}

// DeleteIf deletes id's point with the filter has_id AND revision =
// expected, then reads back: the point is gone if the delete, or a
// concurrent one, removed it.
func (c *collection) DeleteIf(ctx context.Context, id string, expected int64) error {
	const op = "delete if"
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := c.checkConditional(ctx); err != nil {
		return err
	}
	before, err := c.current(ctx, id)
	if err != nil {
		return err
	}
	if before == nil {
		return driver.Conflict(op, id, expected, 0)
	}
	cur, err := revisionOf(before)
	if err != nil {
		return err
	}
	if cur != expected {
		return driver.Conflict(op, id, expected, cur)
	}
	sel := &qc.Filter{Must: []*qc.Condition{qc.NewHasID(qc.NewIDUUID(PointID(id))), atRevision(expected)}}
	if _, err := c.cl.Delete(ctx, &qc.DeletePoints{CollectionName: c.info.Name, Wait: qc.PtrOf(true), Ordering: strong,
		Points: qc.NewPointsSelectorFilter(sel)}); err != nil {
		return qerr(ctx, err)
	}
	after, err := c.current(ctx, id)
	if err != nil {
		return fmt.Errorf("qdrant: delete if %q: the delete was sent but its outcome is unknown: %w", id, err)
	}
	if after == nil {
		return nil
	}
	now, err := revisionOf(after)
	if err != nil {
		return err
	}
	return driver.Conflict(op, id, expected, now)
}

func (c *collection) Get(ctx context.Context, id string) (driver.Record, bool, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	pts, err := c.cl.Get(ctx, &qc.GetPoints{
		CollectionName: c.info.Name, Ids: []*qc.PointId{qc.NewIDUUID(PointID(id))},
		WithPayload: qc.NewWithPayload(true), WithVectors: qc.NewWithVectors(true),
	})
	if err != nil {
		return driver.Record{}, false, qerr(ctx, err)
	}
	if len(pts) == 0 {
		return driver.Record{}, false, nil
	}
	r, err := fromPayload(pts[0].GetPayload(), pts[0].GetVectors())
	if err != nil {
		return driver.Record{}, false, err
	}
	if r.ID != id {
		return driver.Record{}, false, corrupt("point %s holds record %q, expected %q", PointID(id), r.ID, id)
	}
	return r, true, nil
}

// deleteChunk bounds the ids per Delete request.
const deleteChunk = 1000

func (c *collection) deleteIDs(ctx context.Context, pids []*qc.PointId) error {
	for i := 0; i < len(pids); i += deleteChunk {
		_, err := c.cl.Delete(ctx, &qc.DeletePoints{CollectionName: c.info.Name, Wait: qc.PtrOf(true),
			Points: qc.NewPointsSelector(pids[i:min(i+deleteChunk, len(pids))]...)})
		if err != nil {
			return qerr(ctx, err)
		}
	}
	return nil
}

func (c *collection) Delete(ctx context.Context, ids []string) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	pids := make([]*qc.PointId, len(ids))
	for i, id := range ids {
		pids[i] = qc.NewIDUUID(PointID(id))
	}
	return c.deleteIDs(ctx, pids)
}

// DeleteWhere collects the matching point ids, then deletes those ids that
// still match: the delete's selector is the filter itself AND has_id(the
// scanned ids). Qdrant's delete-by-filter does not report a count, hence
// the scan; the filter in the delete keeps a record that another writer
// moved out of the filter's scope between the scan and the delete (a
// delete by ids alone would remove it). The count is the number of records
// the scan matched, which under such a concurrent move can exceed the
// number removed.
func (c *collection) DeleteWhere(ctx context.Context, f driver.Filter) (int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	must := conditions(&f)
	var pids []*qc.PointId
	err := c.scrollAll(ctx, filterOf(must), false, func(p *qc.RetrievedPoint) error {
		pids = append(pids, p.GetId())
		return nil
	})
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(pids); i += deleteChunk {
		sel := append([]*qc.Condition{qc.NewHasID(pids[i:min(i+deleteChunk, len(pids))]...)}, must...)
		_, err := c.cl.Delete(ctx, &qc.DeletePoints{CollectionName: c.info.Name, Wait: qc.PtrOf(true),
			Points: qc.NewPointsSelectorFilter(&qc.Filter{Must: sel})})
		if err != nil {
			return 0, qerr(ctx, err)
		}
	}
	return len(pids), nil
}

func (c *collection) Count(ctx context.Context, f driver.Filter) (int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	n, err := c.cl.Count(ctx, &qc.CountPoints{CollectionName: c.info.Name, Filter: filterOf(conditions(&f)), Exact: qc.PtrOf(true)})
	if err != nil {
		return 0, qerr(ctx, err)
	}
	return int(n), nil
}

// scrollAll visits every point matching filter, in point id order.
func (c *collection) scrollAll(ctx context.Context, filter *qc.Filter, withData bool, fn func(*qc.RetrievedPoint) error) error {
	var offset *qc.PointId
	for {
		pts, next, err := c.cl.ScrollAndOffset(ctx, &qc.ScrollPoints{
			CollectionName: c.info.Name, Filter: filter, Offset: offset, Limit: qc.PtrOf(uint32(256)),
			WithPayload: qc.NewWithPayload(withData), WithVectors: qc.NewWithVectors(withData),
		})
		if err != nil {
			return qerr(ctx, err)
		}
		for _, p := range pts {
			if err := fn(p); err != nil {
				return err
			}
		}
		if next == nil || len(pts) == 0 {
			return nil
		}
		offset = next
	}
}

// List pages by keyset on (created_at, id). Qdrant orders by created_at
// (a datetime index) but does not order ties, so the driver fetches whole
// tie groups: the group at the cursor's instant (to resume after the
// cursor's id) and the group at the page's last instant (so no record of
// it is cut arbitrarily), and orders by id itself.
func (c *collection) List(ctx context.Context, q driver.ListQuery) ([]driver.Record, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	base := conditions(&q.Filter)
	var out []driver.Record
	seen := map[string]bool{}
	add := func(p *qc.RetrievedPoint) error {
		r, err := fromPayload(p.GetPayload(), p.GetVectors())
		if err != nil {
			return err
		}
		if q.After != nil && !driver.ComesAfter(&r, q.After, q.Desc) {
			return nil
		}
		if !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r)
		}
		return nil
	}
	tieGroup := func(t time.Time) error {
		eq := append(slices.Clone(base), dtRange(keyCreatedAt, &qc.DatetimeRange{Gte: ts(t), Lte: ts(t)}))
		return c.scrollAll(ctx, filterOf(eq), true, add)
	}
	rest := base
	if q.After != nil {
		if err := tieGroup(q.After.CreatedAt); err != nil {
			return nil, err
		}
		r := &qc.DatetimeRange{Gt: ts(q.After.CreatedAt)}
		if q.Desc {
			r = &qc.DatetimeRange{Lt: ts(q.After.CreatedAt)}
		}
		rest = append(slices.Clone(base), dtRange(keyCreatedAt, r))
	}
	if need := q.Limit - len(out); need > 0 {
		dir := qc.Direction_Asc
		if q.Desc {
			dir = qc.Direction_Desc
		}
		pts, err := c.cl.Scroll(ctx, &qc.ScrollPoints{
			CollectionName: c.info.Name, Filter: filterOf(rest), Limit: qc.PtrOf(uint32(need)),
			WithPayload: qc.NewWithPayload(true), WithVectors: qc.NewWithVectors(q.WithVectors),
			OrderBy: &qc.OrderBy{Key: keyCreatedAt, Direction: &dir},
		})
		if err != nil {
			return nil, qerr(ctx, err)
		}
		for _, p := range pts {
			if err := add(p); err != nil {
				return nil, err
			}
		}
		if len(pts) == need {
			last, err := fromPayload(pts[len(pts)-1].GetPayload(), nil)
			if err != nil {
				return nil, err
			}
			if err := tieGroup(last.CreatedAt); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(out, func(a, b driver.Record) int {
		if q.Desc {
			return driver.CompareRecords(&b, &a)
		}
		return driver.CompareRecords(&a, &b)
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// Query asks Qdrant for the nearest points with the filter applied inside
// the search. Qdrant does not order equal scores, so the driver widens the
// request until the K-th match scores strictly better than the last point
// returned (no unseen point can then tie it), or until Qdrant returns fewer
// points than asked (all candidates seen), and breaks ties by id itself.
func (c *collection) Query(ctx context.Context, q driver.VectorQuery) ([]driver.Match, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	filter := filterOf(conditions(&q.Filter))
	var params *qc.SearchParams
	if c.exact {
		params = &qc.SearchParams{Exact: qc.PtrOf(true)}
	}
	n := q.K + 1
	for {
		pts, err := c.cl.Query(ctx, &qc.QueryPoints{
			CollectionName: c.info.Name, Query: qc.NewQueryDense(q.Vector), Filter: filter, Params: params,
			// Matches carry no document: leave it on the server.
			Limit: qc.PtrOf(uint64(n)), WithPayload: qc.NewWithPayloadExclude(keyTerms, keyTermWeights), WithVectors: qc.NewWithVectors(q.WithVectors),
		})
		if err != nil {
			return nil, qerr(ctx, err)
		}
		ms := make([]driver.Match, 0, len(pts))
		for _, p := range pts {
			r, err := fromPayload(p.GetPayload(), p.GetVectors())
			if err != nil {
				return nil, err
			}
			r.Terms = nil // a server that ignored the exclusion
			s := float64(p.GetScore())
			if c.info.Distance == driver.DistanceEuclidean {
				s = -s // Qdrant reports the distance; vectorstore scores are higher-is-better
			}
			ms = append(ms, driver.Match{Record: r, Score: s})
		}
		if top, ok := driverutil.TopK(ms, q.K, len(pts) < n); ok {
			return top, nil
		}
		n *= 2
	}
}

// Close closes the client if the driver owns it (opened by URL).
func (c *collection) Close() error {
	if c.owns {
		return c.cl.Close()
	}
	return nil
}
