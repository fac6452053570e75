package driver

import (
	"errors"
	"math"
	"testing"
	"time"
)

// The conformance suite uses Filter.Matches as its reference, so its
// semantics are pinned here independently.
func TestFilterMatches(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Record{ID: "a", Layer: "l", Kind: "k", Scope: Scope{Thread: "t", Resource: "u"},
		Metadata: map[string]string{"x": "1", "y": ""}, CreatedAt: t0, ValidFrom: t0, ValidTo: t0.Add(time.Hour)}
	cases := []struct {
		f    Filter
		want bool
	}{
		{Filter{}, true},
		{Filter{IDs: []string{"b", "a"}}, true},
		{Filter{IDs: []string{"b"}}, false},
		{Filter{Layer: "l", Kind: "k", Thread: "t", Resource: "u"}, true},
		{Filter{Layer: "L"}, false},
		{Filter{Thread: "u"}, false},
		{Filter{Metadata: map[string]string{"x": "1"}}, true},
		{Filter{Metadata: map[string]string{"x": "2"}}, false},
		{Filter{Metadata: map[string]string{"z": "1"}}, false},
		{Filter{CreatedFrom: t0}, true},                        // inclusive
		{Filter{CreatedFrom: t0.Add(time.Microsecond)}, false}, //
		{Filter{CreatedBefore: t0}, false},                     // exclusive
		{Filter{CreatedBefore: t0.Add(time.Microsecond)}, true},
		{Filter{ValidAt: t0}, true},                         // from inclusive
		{Filter{ValidAt: t0.Add(-time.Microsecond)}, false}, //
		{Filter{ValidAt: t0.Add(time.Hour)}, false},         // to exclusive
		{Filter{ValidAt: t0.Add(time.Hour - time.Microsecond)}, true},
	}
	for i, c := range cases {
		if got := c.f.Matches(&r); got != c.want {
			t.Errorf("case %d %+v: Matches = %v, want %v", i, c.f, got, c.want)
		}
	}
	open := Record{ID: "b", CreatedAt: t0}
	if !(&Filter{ValidAt: t0.Add(-1000 * time.Hour)}).Matches(&open) || !(&Filter{ValidAt: t0.Add(1000 * time.Hour)}).Matches(&open) {
		t.Error("zero ValidFrom/ValidTo must be unbounded")
	}
}

func TestOrders(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := Record{ID: "a", CreatedAt: t0}
	b := Record{ID: "b", CreatedAt: t0}
	c := Record{ID: "0", CreatedAt: t0.Add(time.Microsecond)}
	if CompareRecords(&a, &b) >= 0 || CompareRecords(&b, &c) >= 0 || CompareRecords(&c, &a) <= 0 {
		t.Error("CompareRecords is not (CreatedAt, ID)")
	}
	cur := &Cursor{CreatedAt: t0, ID: "a"}
	if ComesAfter(&a, cur, false) || !ComesAfter(&b, cur, false) || ComesAfter(&b, cur, true) || !ComesAfter(&Record{ID: "0", CreatedAt: t0}, cur, true) {
		t.Error("ComesAfter")
	}
	m1 := Match{Record: Record{ID: "b"}, Score: 0.5}
	m2 := Match{Record: Record{ID: "a"}, Score: 0.5}
	m3 := Match{Record: Record{ID: "z"}, Score: 0.9}
	if CompareMatches(&m3, &m1) >= 0 || CompareMatches(&m2, &m1) >= 0 {
		t.Error("CompareMatches is not (score desc, id asc)")
	}
}

func TestScoreAndDistance(t *testing.T) {
	a, b := []float32{1, 0}, []float32{0.6, 0.8}
	if s := Score(DistanceCosine, a, b); math.Abs(s-0.6) > 1e-7 {
		t.Errorf("cosine %v", s)
	}
	if s := Score(DistanceEuclidean, []float32{0, 0}, []float32{3, 4}); s != -5 {
		t.Errorf("euclidean %v, want -5", s)
	}
	for in, want := range map[string]Distance{"": DistanceCosine, "COSINE": DistanceCosine, "ip": DistanceDot, "l2": DistanceEuclidean} {
		if d, err := ParseDistance(in); err != nil || d != want {
			t.Errorf("ParseDistance(%q) = %v, %v", in, d, err)
		}
	}
	if _, err := ParseDistance("manhattan"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ParseDistance(manhattan) = %v", err)
	}
}

func TestConflictError(t *testing.T) {
	for _, tc := range []struct {
		expected, actual int64
		want             string
	}{
		{3, 5, "expected revision 3, found revision 5"},
		{0, 5, "expected no record, found revision 5"},
		{3, 0, "expected revision 3, found no record"},
		{3, -1, "expected revision 3, found another revision"},
		{3, 3, "expected revision 3, found another revision"},
	} {
		err := error(Conflict("upsert if", "x", tc.expected, tc.actual))
		if !errors.Is(err, ErrConflict) || CodeOf(err) != CodeConflict {
			t.Fatalf("Conflict(%d, %d) = %v: not ErrConflict", tc.expected, tc.actual, err)
		}
		var e *Error
		if !errors.As(err, &e) || e.ID != "x" || e.Field != "revision" || e.Msg != tc.want {
			t.Errorf("Conflict(%d, %d) = %+v, want message %q", tc.expected, tc.actual, e, tc.want)
		}
	}
}

func TestCloneKeepsRevision(t *testing.T) {
	r := Record{ID: "a", Revision: 7, Vector: []float32{1}, Metadata: map[string]string{"k": "v"}}
	c := r.Clone()
	c.Vector[0], c.Metadata["k"] = 2, "w"
	if c.Revision != 7 || r.Vector[0] != 1 || r.Metadata["k"] != "v" {
		t.Fatalf("Clone = %+v (original %+v)", c, r)
	}
}
