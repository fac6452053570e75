// Package asof is the as-of benchmark of memory/temporal: a labelled set
// of facts stated over time (supersessions, corrections, backfills,
// relative phrases across week and month boundaries) and questions "what
// was S's P on date D", replayed through a real session of the layer and
// answered with Layer.AsOf. Default is the set in testdata/asof.json; the
// ledger answers all of it correctly. It is evaluation code, kept out of
// the layer's API; cmd/recallquality reports it.
package asof

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

// Set is a labelled as-of benchmark: facts stated over time (with
// supersessions, corrections, backfills and relative time phrases), and
// questions "what was S's P on date D" with the expected answer.
type Set struct {
	Name string `json:"name"`
	// Location is the IANA name of the calendar the phrases and dates use;
	// "" means UTC.
	Location string  `json:"location,omitempty"`
	Events   []Event `json:"events"`
	Queries  []Query `json:"queries"`
}

// Event is one message: the facts it states, recorded at At.
type Event struct {
	At    time.Time        `json:"at"`
	Facts []temporal.Input `json:"facts"`
}

// Query asks for the value of Subject's Predicate as of Date: a day
// (its end) or an RFC 3339 instant. Expect "" means no fact held then.
type Query struct {
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Date      string `json:"date"`
	Expect    string `json:"expect"`
	// Note says what the query tests.
	Note string `json:"note,omitempty"`
}

// Report is the outcome of Evaluate.
type Report struct {
	Set      string
	Events   int
	Queries  int
	Correct  int
	Accuracy float64
	Failures []Failure
}

// Failure is a query answered wrongly, with the values found.
type Failure struct {
	Query Query
	Got   []string
}

func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "as-of %s: %d/%d correct (%.1f%%) over %d events", r.Set, r.Correct, r.Queries, 100*r.Accuracy, r.Events)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "\n  %s · %s on %s: want %q, got %q (%s)", f.Query.Subject, f.Query.Predicate, f.Query.Date, f.Query.Expect, f.Got, f.Query.Note)
	}
	return b.String()
}

//go:embed testdata/asof.json
var defaultSet []byte

// Default returns the labelled set shipped with the package
// (testdata/asof.json).
func Default() Set {
	set, err := Parse(defaultSet)
	if err != nil {
		panic("asof: embedded set: " + err.Error()) // a build defect, caught by the tests
	}
	return set
}

// ErrInvalidSet is wrapped by Parse and Evaluate for a set that
// cannot be evaluated.
var ErrInvalidSet = errors.New("asof: invalid set")

// Parse decodes a set from JSON, rejecting unknown fields.
func Parse(data []byte) (Set, error) {
	var set Set
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&set); err != nil {
		return Set{}, fmt.Errorf("%w: %v", ErrInvalidSet, err)
	}
	if len(set.Events) == 0 || len(set.Queries) == 0 {
		return Set{}, fmt.Errorf("%w: needs events and queries", ErrInvalidSet)
	}
	return set, nil
}

// Evaluate measures the correctness of as-of answers. It replays the
// set's events through a real core.Session, each a temporal/record call
// made with the store clock set to the event's time (so relative phrases
// resolve as they would have then), then answers every query with AsOf
// at the query's instant and compares the value(s) found for the query's
// subject and predicate with the expected one (case and spacing ignored;
// exactly one value must hold, or none when none is expected).
//
// It writes to store's collection under the layer id "temporal-eval" and
// a fresh thread, and deletes those records before it returns. The
// store's own clock is not touched.
func Evaluate(ctx context.Context, store *memory.Store, set Set) (Report, error) {
	rep := Report{Set: set.Name, Events: len(set.Events), Queries: len(set.Queries)}
	loc := time.UTC
	if set.Location != "" {
		var err error
		if loc, err = time.LoadLocation(set.Location); err != nil {
			return rep, fmt.Errorf("%w: location: %v", ErrInvalidSet, err)
		}
	}
	var clock time.Time
	st := *store
	st.Now = func() time.Time { return clock }
	l, err := temporal.New(&st, temporal.Options{Common: memory.Common{ID: "temporal-eval"}, Location: loc})
	if err != nil {
		return rep, err
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	thread := "asof-eval-" + hex.EncodeToString(nonce[:])
	scope := vectorstore.Scope{Thread: thread}
	defer func() {
		// Cleanup must run even when ctx was cancelled mid-evaluation.
		_, _ = store.Records.DeleteWhere(context.WithoutCancel(ctx), vectorstore.Filter{Layer: "temporal-eval", Thread: thread})
	}()
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{l}})
	if err != nil {
		return rep, err
	}
	events := slices.Clone(set.Events)
	slices.SortStableFunc(events, func(a, b Event) int { return a.At.Compare(b.At) })
	if len(events) > 0 {
		clock = events[0].At
	}
	sess, err := rt.Start(ctx, core.RunOptions{RunID: thread, ThreadID: thread})
	if err != nil {
		return rep, err
	}
	defer sess.Close(ctx)
	for i, ev := range events {
		clock = ev.At
		args, err := json.Marshal(map[string][]temporal.Input{"facts": ev.Facts})
		if err != nil {
			return rep, fmt.Errorf("%w: event %d: %v", ErrInvalidSet, i, err)
		}
		call := core.FunctionCall(fmt.Sprintf("event-%d", i), l.ID+"/record", string(args))
		out, err := sess.ExecuteTool(ctx, call)
		if err != nil {
			return rep, fmt.Errorf("asof: evaluate: event %d: %w", i, err)
		}
		if strings.HasPrefix(out.Output, "error: ") {
			return rep, fmt.Errorf("%w: event %d (%s): %s", ErrInvalidSet, i, ev.At.Format(time.RFC3339), out.Output)
		}
	}
	for i, q := range set.Queries {
		t, err := temporal.AsOfInstant(q.Date, clock, loc)
		if err != nil {
			return rep, fmt.Errorf("%w: query %d: %v", ErrInvalidSet, i, err)
		}
		facts, err := l.AsOf(ctx, scope, t)
		if err != nil {
			return rep, fmt.Errorf("asof: evaluate: query %d: %w", i, err)
		}
		var got []string
		for _, f := range facts {
			if temporal.SubjectKey(f.Subject) == temporal.SubjectKey(q.Subject) && temporal.PredicateKey(f.Predicate) == temporal.PredicateKey(q.Predicate) {
				got = append(got, f.Value)
			}
		}
		ok := len(got) == 0 && q.Expect == "" || len(got) == 1 && normValue(got[0]) == normValue(q.Expect)
		if ok {
			rep.Correct++
		} else {
			rep.Failures = append(rep.Failures, Failure{Query: q, Got: got})
		}
	}
	if rep.Queries > 0 {
		rep.Accuracy = float64(rep.Correct) / float64(rep.Queries)
	}
	return rep, nil
}

// normValue is how answers compare: case, spacing and trailing sentence
// punctuation ignored.
func normValue(s string) string {
	return strings.ToLower(strings.TrimRight(strings.Join(strings.Fields(s), " "), " .,;:"))
}
