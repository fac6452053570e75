package core

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"

	"github.com/stratamem/strata/core/internal/keys"
	"github.com/stratamem/strata/storage"
)

// assemblyIndex is what a thread keeps next to its records: the next turn
// number, the oldest record kept, the last cache report recorded and the
// runs whose stored logs the records use.
type assemblyIndex struct {
	Next      int          `json:"next"`
	First     int          `json:"first"`
	LastCache *CacheReport `json:"last_cache,omitempty"`
	Runs      []storedRun  `json:"runs,omitempty"`
}

// storedRun is a run's stored log: Len items, used by the records up to
// turn Last.
type storedRun struct {
	Tag  string `json:"tag"`
	Len  int    `json:"len"`
	Last int    `json:"last"`
}

// defaultRetention is the number of records a thread keeps when
// Config.AssemblyRetention is zero.
const defaultRetention = 200

// retention is the number of records a thread keeps; 0 means no limit.
func (c *Config) retention() int {
	switch {
	case c.AssemblyRetention == 0:
		return defaultRetention
	case c.AssemblyRetention < 0:
		return 0
	}
	return c.AssemblyRetention
}

// planRecorder is what a session keeps between its records, so that a
// record costs what changed since the previous one, not the whole view.
type planRecorder struct {
	tag string
	// chunked is the number of log items stored in complete chunks;
	// written the number of log items stored at all (the last chunk may
	// be partial). enc holds the encodings of the items of the partial
	// chunk (from chunked on).
	chunked, written int
	enc              [][]byte
	// chain[i] digests the log's first i items (chain[0] is zero), each
	// link the digest of the previous link and the item's encoding.
	chain [][32]byte
	// blobs are the digests of the parts already stored.
	blobs map[string]bool
	// anchor remembers the anchor band's digest by a fast hash.
	anchorHash   uint64
	anchorDigest string
	system       string
	tools        string
	// bands remembers the last encoding of the other bands.
	bands [BandTail + 1]bandMemo
	// idx and idxRev are the thread's index as last read or written.
	idx    assemblyIndex
	idxRev int64
	loaded bool
	// chunkRev is the revision this session last wrote the partial log
	// chunk at, recRevs those of the records it wrote: a rewrite or a
	// retention delete then costs one store call, not a read first.
	chunkRev int64
	recRevs  map[int]int64
}

type bandMemo struct {
	hash uint64
	raw  json.RawMessage
	sum  [32]byte
}

func hexDigest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// blob stores raw under its digest unless this session already did, and
// returns the digest.
func (s *Session) blob(ctx context.Context, raw []byte) (string, error) {
	r := &s.plan
	d := hexDigest(raw)
	if r.blobs[d] {
		return d, nil
	}
	k := keys.Blob(s.info.ResourceID, s.info.ThreadID, d)
	if _, err := s.rt.store.Put(ctx, k, raw, 0); err != nil && !errors.Is(err, storage.ErrConflict) {
		// A conflict is the same content stored before: digests name it.
		return "", err
	}
	if r.blobs == nil {
		r.blobs = map[string]bool{}
	}
	r.blobs[d] = true
	return d, nil
}

// storeLog writes the log items new since the previous record: the
// partial chunk again, and each chunk that fills.
func (s *Session) storeLog(ctx context.Context) error {
	r := &s.plan
	if r.tag == "" {
		// The run id names the run, but a host may start another session
		// under the same id (a resumed run, a fixed id in a script) with
		// another log: a nonce per session keeps each session's stored
		// log its own, so earlier records still read theirs.
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		r.tag = hexDigest(append([]byte(s.info.RunID+"\x00"), nonce[:]...))[:16]
	}
	n := len(s.items)
	if len(r.chain) == 0 {
		r.chain = append(r.chain, [32]byte{})
	}
	for i := len(r.chain) - 1; i < n; i++ {
		raw, err := marshalNoEscape(s.items[i])
		if err != nil {
			return err
		}
		raw = trimNewline(raw)
		r.enc = append(r.enc, raw)
		d := sha256.Sum256(raw)
		var link [64]byte
		copy(link[:32], r.chain[len(r.chain)-1][:])
		copy(link[32:], d[:])
		r.chain = append(r.chain, sha256.Sum256(link[:]))
	}
	for r.written < n {
		c := r.chunked / LogChunk
		end := min(n, r.chunked+LogChunk)
		buf := []byte{'['}
		for i, raw := range r.enc[:end-r.chunked] {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, raw...)
		}
		buf = append(buf, ']')
		rev, err := putAt(ctx, s.rt.store, keys.LogChunk(s.info.ResourceID, s.info.ThreadID, r.tag, c), buf, r.chunkRev)
		if err != nil {
			return err
		}
		r.written, r.chunkRev = end, rev
		if end-r.chunked == LogChunk {
			r.enc = r.enc[LogChunk:]
			r.chunked, r.chunkRev = end, 0
		}
	}
	return nil
}

func trimNewline(raw []byte) []byte {
	if len(raw) > 0 && raw[len(raw)-1] == '\n' {
		return raw[:len(raw)-1]
	}
	return raw
}

var anchorSeed = maphash.MakeSeed()

// recordPlan stores the view as the thread's next assembly record and
// drops the records past the retention bound, oldest first.
func (s *Session) recordPlan(ctx context.Context, v *View) error {
	r := &s.plan
	if err := s.storeLog(ctx); err != nil {
		return err
	}
	plan := s.historyPlan(v)
	rec := AssemblyRecord{Version: AssemblyRecordVersion, RunID: s.info.RunID, RunTurn: v.Usage.Turn, ThreadID: s.info.ThreadID,
		ResourceID: s.info.ResourceID, Breakpoints: v.Breakpoints, Updates: v.updates, Usage: v.Usage,
		ClearedOutputs: v.Usage.Cleared, History: plan}
	if c := v.Usage.Compaction; c != nil && c.Folded > 0 {
		rec.Compaction = &RecordedCompaction{Boundary: c.Folded}
		for i := len(s.events) - 1; i >= 0; i-- {
			if it := s.items[s.events[i]]; it.Type == TypeCompaction && it.Compaction.Through == c.Folded {
				rec.Compaction.Event = fmt.Sprintf("log:%d", s.events[i])
				break
			}
		}
	}
	rec.Hashes.Prefix = v.PrefixHash
	parts := &StoredParts{Log: StoredLog{Run: r.tag, Len: len(s.items)}}
	if r.tools == "" && len(v.Tools) > 0 {
		raw, err := marshalNoEscape(v.Tools)
		if err != nil {
			return err
		}
		if r.tools, err = s.blob(ctx, raw); err != nil {
			return err
		}
	}
	parts.Tools = r.tools
	dyn := sha256.New()
	for b, items := range v.bands {
		if len(items) == 0 {
			continue
		}
		band := Band(b)
		sb := StoredBand{Band: band.String(), Tokens: v.Usage.BandTokens[b], Count: len(items)}
		switch band {
		case BandSystem, BandAnchor:
			d, err := s.bandBlob(ctx, band, items)
			if err != nil {
				return err
			}
			sb.Blob = d
			if band == BandAnchor {
				rec.Hashes.Anchor = d
			}
		case BandHistory:
			inline := make([]Item, 0, len(plan.Inline))
			for _, i := range plan.Inline {
				inline = append(inline, items[i])
			}
			sb.Inline = inline
			// The dynamic digest folds in each span of the log by the
			// chained digests of the log at its ends (kept as the log is
			// stored, so a long history costs no more than a short one)
			// and each inline item by its own digest, in band order.
			fmt.Fprintf(dyn, "%d:%d\n", b, len(items))
			pos, in := 0, plan.Inline
			for _, sp := range plan.Spans {
				for len(in) > 0 && in[0] == pos {
					s.writeInlineDigest(dyn, items[pos])
					in, pos = in[1:], pos+1
				}
				dyn.Write(r.chain[sp.From][:])
				dyn.Write(r.chain[sp.To][:])
				pos += sp.To - sp.From
				for len(in) > 0 && in[0] == pos {
					s.writeInlineDigest(dyn, items[pos])
					in, pos = in[1:], pos+1
				}
			}
			for ; len(in) > 0; in = in[1:] {
				s.writeInlineDigest(dyn, items[in[0]])
			}
		default:
			raw, sum, err := s.encodedBand(band, items)
			if err != nil {
				return err
			}
			sb.Items = raw
			fmt.Fprintf(dyn, "%d:%d\n", b, len(items))
			dyn.Write(sum[:])
		}
		parts.Bands = append(parts.Bands, sb)
	}
	rec.Hashes.Dynamic = hex.EncodeToString(dyn.Sum(nil))
	rec.Stored = parts
	return s.appendRecord(ctx, &rec)
}

func (s *Session) writeInlineDigest(h interface{ Write([]byte) (int, error) }, it Item) {
	raw, _ := marshalNoEscape(it)
	sum := sha256.Sum256(trimNewline(raw))
	h.Write(sum[:])
}

// bandBlob stores the system or anchor band by its digest, remembered
// across records so an unchanged band costs one fast hash.
func (s *Session) bandBlob(ctx context.Context, band Band, items []Item) (string, error) {
	r := &s.plan
	if band == BandSystem && r.system != "" {
		return r.system, nil
	}
	var h uint64
	if band == BandAnchor {
		var mh maphash.Hash
		mh.SetSeed(anchorSeed)
		for i := range items {
			writeItemHash(&mh, &items[i])
		}
		h = mh.Sum64()
		if r.anchorDigest != "" && h == r.anchorHash {
			return r.anchorDigest, nil
		}
	}
	raw, err := marshalNoEscape(items)
	if err != nil {
		return "", err
	}
	d, err := s.blob(ctx, trimNewline(raw))
	if err != nil {
		return "", err
	}
	if band == BandSystem {
		r.system = d
	} else {
		r.anchorHash, r.anchorDigest = h, d
	}
	return d, nil
}

// encodedBand encodes a live, updates or tail band with its digest,
// reusing the previous record's when the band did not change.
func (s *Session) encodedBand(band Band, items []Item) (json.RawMessage, [32]byte, error) {
	var mh maphash.Hash
	mh.SetSeed(anchorSeed)
	for i := range items {
		writeItemHash(&mh, &items[i])
	}
	h := mh.Sum64()
	m := &s.plan.bands[band]
	if m.raw != nil && m.hash == h {
		return m.raw, m.sum, nil
	}
	raw, err := marshalNoEscape(items)
	if err != nil {
		return nil, [32]byte{}, err
	}
	raw = trimNewline(raw)
	*m = bandMemo{hash: h, raw: raw, sum: sha256.Sum256(raw)}
	return m.raw, m.sum, nil
}

// historyPlan is planHistory, in O(1) when the history band is the log's
// own tail (the assembly shares the log's memory then).
func (s *Session) historyPlan(v *View) HistoryPlan {
	band := v.bands[BandHistory]
	n, m := len(s.items), len(band)
	if m > 0 && m <= n && &band[0] == &s.items[n-m] {
		return HistoryPlan{LogLen: n, Spans: []LogSpan{{From: n - m, To: n}}, Dropped: v.Usage.HistoryDropped, Cut: v.Usage.UserMessageCut}
	}
	return planHistory(s.items, band, v.Usage)
}

func writeItemHash(h *maphash.Hash, it *Item) {
	field := func(s string) {
		h.WriteString(s)
		h.WriteByte(0)
	}
	field(string(it.Type))
	field(it.ID)
	field(string(it.Role))
	for _, p := range it.Content {
		field(p.Type)
		field(p.Text)
	}
	field(it.CallID)
	field(it.Name)
	field(it.Arguments)
	field(it.Output)
	h.WriteByte(1)
}

// appendRecord numbers rec as the thread's next turn in the index, stores
// it, and applies the retention bound.
func (s *Session) appendRecord(ctx context.Context, rec *AssemblyRecord) error {
	r := &s.plan
	st := s.rt.store
	ik := keys.AssemblyIndex(s.info.ResourceID, s.info.ThreadID)
	for attempt := 0; ; attempt++ {
		if !r.loaded {
			r.idx, r.idxRev = assemblyIndex{}, 0
			e, err := st.Get(ctx, ik)
			switch {
			case errors.Is(err, storage.ErrNotFound):
			case err != nil:
				return err
			default:
				if err := json.Unmarshal(e.Value, &r.idx); err != nil {
					return fmt.Errorf("core: decode the assembly index of thread %q: %w", s.info.ThreadID, err)
				}
				r.idxRev = e.Revision
			}
			r.loaded = true
		}
		idx := r.idx
		idx.Runs = append([]storedRun(nil), idx.Runs...)
		rec.Turn = idx.Next
		idx.Next++
		rec.PrevCache = nil
		if rep, ok := s.LastCacheReport(); ok && (idx.LastCache == nil || !sameReport(*idx.LastCache, rep)) {
			rec.PrevCache = &rep
			idx.LastCache = &rep
		}
		run := storedRun{Tag: r.tag, Len: len(s.items), Last: rec.Turn}
		found := false
		for i := range idx.Runs {
			if idx.Runs[i].Tag == r.tag {
				idx.Runs[i], found = run, true
			}
		}
		if !found {
			idx.Runs = append(idx.Runs, run)
		}
		// Retention: the records (and runs' logs) past the bound go.
		var drop []int
		var dropRuns []storedRun
		if n := s.rt.cfg.retention(); n > 0 && idx.Next-idx.First > n {
			for t := idx.First; t < idx.Next-n; t++ {
				drop = append(drop, t)
			}
			idx.First = idx.Next - n
			kept := idx.Runs[:0]
			for _, ru := range idx.Runs {
				if ru.Last < idx.First {
					dropRuns = append(dropRuns, ru)
				} else {
					kept = append(kept, ru)
				}
			}
			idx.Runs = kept
		}
		raw, err := marshalNoEscape(idx)
		if err != nil {
			return err
		}
		rev, err := st.Put(ctx, ik, raw, r.idxRev)
		if err != nil {
			r.loaded = false // another run of the thread wrote it: read again
			if !errors.Is(err, storage.ErrConflict) || attempt == 2 {
				return err
			}
			continue
		}
		r.idx, r.idxRev = idx, rev
		body, err := encodeRecord(rec)
		if err != nil {
			return err
		}
		recRev, err := putAt(ctx, st, keys.Assembly(s.info.ResourceID, s.info.ThreadID, rec.Turn), body, 0)
		if err != nil {
			return err
		}
		if r.recRevs == nil {
			r.recRevs = map[int]int64{}
		}
		r.recRevs[rec.Turn] = recRev
		for _, t := range drop {
			if err := deleteAt(ctx, st, keys.Assembly(s.info.ResourceID, s.info.ThreadID, t), r.recRevs[t]); err != nil {
				return err
			}
			delete(r.recRevs, t)
		}
		for _, ru := range dropRuns {
			for c := 0; c*LogChunk < ru.Len; c++ {
				if err := deleteAny(ctx, st, keys.LogChunk(s.info.ResourceID, s.info.ThreadID, ru.Tag, c)); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// encodeRecord is marshalNoEscape(rec) without re-encoding the bands
// stored as items: encoding/json validates and compacts every raw
// message it writes, the largest part of a record's cost, although these
// are the runtime's own compact encodings. Each is marshalled as a short
// placeholder and spliced in after; the placeholder's unescaped quotes
// cannot occur inside a JSON string, so only the structural one matches.
func encodeRecord(rec *AssemblyRecord) ([]byte, error) {
	p := rec.Stored
	if p == nil {
		return marshalNoEscape(rec)
	}
	raws := make([]json.RawMessage, len(p.Bands))
	for i := range p.Bands {
		if b := &p.Bands[i]; len(b.Items) > 0 {
			raws[i] = b.Items
			b.Items = json.RawMessage(bandPlaceholder(i))
		}
	}
	body, err := marshalNoEscape(rec)
	for i, raw := range raws {
		if raw != nil {
			p.Bands[i].Items = raw
		}
	}
	if err != nil {
		return nil, err
	}
	const key = `"items":`
	for i, raw := range raws {
		if raw == nil {
			continue
		}
		ph := key + bandPlaceholder(i)
		at := bytes.Index(body, []byte(ph))
		if at < 0 {
			return nil, fmt.Errorf("core: encode assembly record %d: band %d not found", rec.Turn, i)
		}
		body = slices.Concat(body[:at+len(key)], raw, body[at+len(ph):])
	}
	return body, nil
}

func bandPlaceholder(i int) string { return `"\u0000band ` + strconv.Itoa(i) + `"` }

// putAt writes value at k, expecting revision rev (0: absent), and
// returns the new revision; when k holds another revision (another run
// of the thread wrote it, or rev was not known) it writes over it.
func putAt(ctx context.Context, st storage.Store, k storage.Key, value []byte, rev int64) (int64, error) {
	for attempt := 0; ; attempt++ {
		nrev, err := st.Put(ctx, k, value, rev)
		if err == nil || !errors.Is(err, storage.ErrConflict) || attempt == 2 {
			return nrev, err
		}
		e, gerr := st.Get(ctx, k)
		switch {
		case errors.Is(gerr, storage.ErrNotFound):
			rev = 0
		case gerr != nil:
			return 0, gerr
		default:
			rev = e.Revision
		}
	}
}

// deleteAt deletes k expecting revision rev, and whatever its revision
// when rev is 0 or stale; an absent key is no error.
func deleteAt(ctx context.Context, st storage.Store, k storage.Key, rev int64) error {
	if rev != 0 {
		err := st.Delete(ctx, k, rev)
		if err == nil || errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return deleteAny(ctx, st, k)
}

// putOver writes value at k whatever revision is there.
func putOver(ctx context.Context, st storage.Store, k storage.Key, value []byte) error {
	rev := int64(0)
	for attempt := 0; ; attempt++ {
		_, err := st.Put(ctx, k, value, rev)
		if err == nil || !errors.Is(err, storage.ErrConflict) || attempt == 2 {
			return err
		}
		e, gerr := st.Get(ctx, k)
		switch {
		case errors.Is(gerr, storage.ErrNotFound):
			rev = 0
		case gerr != nil:
			return gerr
		default:
			rev = e.Revision
		}
	}
}

// deleteAny deletes k whatever its revision; an absent key is no error.
func deleteAny(ctx context.Context, st storage.Store, k storage.Key) error {
	for attempt := 0; ; attempt++ {
		e, err := st.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		err = st.Delete(ctx, k, e.Revision)
		if err == nil || !errors.Is(err, storage.ErrConflict) || attempt == 2 {
			return err
		}
	}
}

// Hydrate reads the record's stored parts back from st (the store the
// runtime recorded into) into Bands and Tools, so that View renders the
// assembly again. A record already holding its bands is left as it is.
func (r *AssemblyRecord) Hydrate(ctx context.Context, st storage.Store) error {
	p := r.Stored
	if p == nil || len(r.Bands) > 0 {
		return nil
	}
	blob := func(d string, v any) error {
		e, err := st.Get(ctx, keys.Blob(r.ResourceID, r.ThreadID, d))
		if err != nil {
			return fmt.Errorf("core: recorded part %.12s of assembly %d: %w", d, r.Turn, err)
		}
		return json.Unmarshal(e.Value, v)
	}
	if p.Tools != "" {
		if err := blob(p.Tools, &r.Tools); err != nil {
			return err
		}
	}
	chunks := map[int][]Item{}
	logItem := func(k int) (Item, error) {
		c := k / LogChunk
		items, ok := chunks[c]
		if !ok {
			e, err := st.Get(ctx, keys.LogChunk(r.ResourceID, r.ThreadID, p.Log.Run, c))
			if err != nil {
				return Item{}, fmt.Errorf("core: stored log chunk %d of assembly %d: %w", c, r.Turn, err)
			}
			if err := json.Unmarshal(e.Value, &items); err != nil {
				return Item{}, fmt.Errorf("core: decode stored log chunk %d of assembly %d: %w", c, r.Turn, err)
			}
			chunks[c] = items
		}
		if k%LogChunk >= len(items) {
			return Item{}, fmt.Errorf("core: stored log chunk %d of assembly %d holds %d items, not item %d", c, r.Turn, len(items), k)
		}
		return items[k%LogChunk], nil
	}
	for _, sb := range p.Bands {
		rb := RecordedBand{Band: sb.Band, Tokens: sb.Tokens}
		switch {
		case sb.Blob != "":
			if err := blob(sb.Blob, &rb.Items); err != nil {
				return err
			}
		case sb.Band == BandHistory.String():
			rb.Items = make([]Item, 0, sb.Count)
			inline, pos := r.History.Inline, 0
			in := sb.Inline
			take := func() {
				for len(inline) > 0 && inline[0] == pos && len(in) > 0 {
					rb.Items = append(rb.Items, in[0])
					inline, in, pos = inline[1:], in[1:], pos+1
				}
			}
			for _, sp := range r.History.Spans {
				for k := sp.From; k < sp.To; k++ {
					take()
					it, err := logItem(k)
					if err != nil {
						return err
					}
					rb.Items = append(rb.Items, it)
					pos++
				}
			}
			take()
		default:
			if err := json.Unmarshal(sb.Items, &rb.Items); err != nil {
				return fmt.Errorf("core: decode band %s of assembly %d: %w", sb.Band, r.Turn, err)
			}
		}
		if len(rb.Items) != sb.Count {
			return fmt.Errorf("core: band %s of assembly %d: %d items stored, %d read back", sb.Band, r.Turn, sb.Count, len(rb.Items))
		}
		r.Bands = append(r.Bands, rb)
	}
	return nil
}
