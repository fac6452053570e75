package semantic

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/vectorstore"
)

// Record kinds.
const (
	// KindMessage is a message: Text is the message, Vector its
	// embedding, Terms its lexical document (see Ranking.ContextWeight).
	KindMessage = "message"
	// KindContext is a message in its context: Text is the message with
	// the messages just before and after it (each cut at contextChars),
	// Vector its embedding, MetaMessage the message's record id. It is
	// derived data, written with the message's vector.
	KindContext = "context"
)

// Metadata keys of the layer's records.
const (
	// MetaRole is the message's role, "user" or "assistant".
	MetaRole = "role"
	// MetaSeq is the message's position in its thread (decimal, from 0):
	// it orders the messages written in the same microsecond.
	MetaSeq = "seq"
	// MetaPrev is the id of the thread's message before this one; absent
	// on a thread's first message.
	MetaPrev = "prev"
	// MetaNext is the id of the thread's message after this one, set
	// when the message's vector is stored (its context is complete then).
	MetaNext = "next"
	// MetaRun is the id of the run that recorded the message.
	MetaRun = "run"
	// MetaItemID is the item's own id (core.Item.ID), when it had one.
	MetaItemID = "item_id"
	// MetaEmbedding is the Model() of the embedder that computed the
	// record's vector, or EmbeddingPending while the vector is a
	// placeholder. Vector search only considers records whose value is
	// the current embedder's model.
	MetaEmbedding = "embedding"
	// MetaTruncated is "true" when the stored text was cut to
	// maxStoredBytes.
	MetaTruncated = "truncated"
	// MetaMessage is, on a context record, the id of its message.
	MetaMessage = "message"
)

// EmbeddingPending marks a record written before its embedding.
const EmbeddingPending = "pending"

// maxStoredBytes caps the text kept per message: a recall layer shows
// messages, it is not an archive of pasted files, and an embedding model
// reads only the first few hundred tokens anyway.
const maxStoredBytes = 64 << 10

// recordID is deterministic: the item's own id when it has one (so a host
// that appends the same message again in a later run writes the same
// record), else the run and log position, plus the role and text.
func recordID(layer string, run core.RunInfo, it core.Item, index int, text string) string {
	h := sha256.New()
	w := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	w(layer)
	w(run.ThreadID)
	w(run.ResourceID)
	if it.ID != "" {
		w("item")
		w(it.ID)
	} else {
		w("pos")
		w(run.RunID)
		w(strconv.Itoa(index))
		w(string(it.Role))
		w(text)
	}
	return layer + ":" + hex.EncodeToString(h.Sum(nil))[:40]
}

// cleanText makes a message text storable in every backend: valid UTF-8,
// no NUL bytes, at most maxStoredBytes (cut on a rune boundary).
func cleanText(s string) (text string, truncated bool) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if len(s) > maxStoredBytes {
		cut := maxStoredBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, truncated = s[:cut], true
	}
	return s, truncated
}

// entry is the layer's view of one message record, without its vector.
type entry struct {
	id      string
	thread  string
	res     string
	role    core.Role
	text    string
	itemID  string
	run     string
	created time.Time
	seq     int64
	trunc   bool
	// prev is the id of the thread's message before this one; "" for
	// the first.
	prev string
	// next is the id of the message after it, once known to the record
	// (see MetaNext).
	next string
	// bag is the analysed text (term -> occurrences), computed once.
	bag map[string]float64
	// terms is the lexical document stored with the record.
	terms vectorstore.Terms
	// embedded is the model that embedded the stored vector; "" while
	// the vector is a placeholder.
	embedded string
	// vec is the message's vector by vecModel, when the session has it
	// (it computed it, or read it with the thread's latest messages):
	// its neighbours' contexts are computed from it. rejectedBy is the
	// model that rejected the text.
	vec                  []float32
	vecModel, rejectedBy string
}

// rejected reports whether model rejected e's text.
func (e *entry) rejected(model string) bool { return e.rejectedBy == model }

// ContextID is the id of the legacy context record of the message record
// id (see KindContext).
func ContextID(messageID string) string { return messageID + "/context" }

// IsMessage reports whether r is a message record a semantic layer can
// read: its kind and a role.
func IsMessage(r vectorstore.Record) bool { return r.Kind == KindMessage && r.Metadata[MetaRole] != "" }

// CompareMessages orders message records as the layer orders a thread:
// creation time, then the MetaSeq metadata, then id. Neighbours in this
// order are the messages a context record quotes.
func CompareMessages(a, b vectorstore.Record) int {
	return compareOrder(a.CreatedAt, recordSeq(a), a.ID, b.CreatedAt, recordSeq(b), b.ID)
}

func recordSeq(r vectorstore.Record) int64 {
	n, _ := strconv.ParseInt(r.Metadata[MetaSeq], 10, 64)
	return n
}

func compareOrder(ta time.Time, sa int64, ia string, tb time.Time, sb int64, ib string) int {
	if c := ta.Compare(tb); c != 0 {
		return c
	}
	if c := cmp.Compare(sa, sb); c != 0 {
		return c
	}
	return strings.Compare(ia, ib)
}

// before orders the entries of one thread: time, then seq, then id.
func (e *entry) before(o *entry) bool { return e.compare(o) < 0 }

// compare is before as a comparison function.
func (e *entry) compare(o *entry) int {
	return compareOrder(e.created, e.seq, e.id, o.created, o.seq, o.id)
}

// record is the entry as a record carrying vec; model is the value of
// MetaEmbedding.
func (e *entry) record(layer string, vec []float32, model string) vectorstore.Record {
	md := map[string]string{
		MetaRole:      string(e.role),
		MetaSeq:       strconv.FormatInt(e.seq, 10),
		MetaEmbedding: model,
	}
	if e.run != "" {
		md[MetaRun] = e.run
	}
	if e.prev != "" {
		md[MetaPrev] = e.prev
	}
	if e.next != "" {
		md[MetaNext] = e.next
	}
	if e.itemID != "" {
		md[MetaItemID] = e.itemID
	}
	if e.trunc {
		md[MetaTruncated] = "true"
	}
	return vectorstore.Record{
		ID: e.id, Layer: layer, Kind: KindMessage,
		Scope: vectorstore.Scope{Thread: e.thread, Resource: e.res},
		Text:  e.text, Vector: vec, Terms: e.terms, Metadata: md, CreatedAt: e.created,
	}
}

// entryOf reads a stored record back; ok is false for a record this layer
// cannot use (not a message, no role).
func entryOf(r vectorstore.Record) (*entry, bool) {
	if !IsMessage(r) {
		return nil, false
	}
	seq := recordSeq(r)
	e := &entry{
		id: r.ID, thread: r.Scope.Thread, res: r.Scope.Resource,
		role: core.Role(r.Metadata[MetaRole]), text: r.Text,
		itemID: r.Metadata[MetaItemID], run: r.Metadata[MetaRun],
		created: r.CreatedAt, seq: seq, trunc: r.Metadata[MetaTruncated] == "true",
		prev: r.Metadata[MetaPrev], next: r.Metadata[MetaNext], terms: r.Terms,
	}
	switch m := r.Metadata[MetaEmbedding]; {
	case strings.HasPrefix(m, EmbeddingRejected):
		e.rejectedBy = strings.TrimPrefix(m, EmbeddingRejected)
	case m != EmbeddingPending:
		e.embedded = m
		if r.Vector != nil {
			e.vec, e.vecModel = r.Vector, m
		}
	}
	return e, true
}
