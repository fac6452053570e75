package lexical_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/stratamem/strata/memory/lexical"
)

func TestAnalyzerTerms(t *testing.T) {
	an := lexical.DefaultAnalyzer()
	cases := map[string][]string{
		"I bought two new running shoes yesterday!": {"buy", "two", "new", "run", "shoe", "yesterday"},
		"When did I buy the shoes?":                 {"buy", "shoe"},
		"Anna's dog doesn't like the vet":           {"anna", "dog", "like", "vet"},
		"Anna’s flights were cancelled":             {"anna", "flight", "cancel"},
		"Cádiz CAFÉ 2024 7pm £900 a":                {"cádiz", "café", "2024", "7pm", "900"},
		"e-bike, X-ray":                             {"bike", "ray"},
		"   ":                                       nil,
		"\xff\xfe broken utf8 bytes":                {"break", "utf8", "byte"},
		"I won the race but won't run again":        {"win", "race", "run"},
		"She left the keys; the car was stolen":     {"left", "key", "car", "steal"},
	}
	for in, want := range cases {
		if got := an.Terms(in); !slices.Equal(got, want) {
			t.Errorf("Terms(%q) = %q, want %q", in, got, want)
		}
	}
	plain := lexical.NewAnalyzer(lexical.AnalyzerOptions{NoStemming: true, NoStopwords: true})
	if got := plain.Terms("The running shoes I bought"); !slices.Equal(got, []string{"the", "running", "shoes", "bought"}) {
		t.Errorf("plain analyzer: %q", got)
	}
	extra := lexical.NewAnalyzer(lexical.AnalyzerOptions{Stopwords: []string{"Shoes"}, MaxTermBytes: 6})
	if got := extra.Terms("shoes runs averyverylongword"); !slices.Equal(got, []string{"run"}) {
		t.Errorf("extra stopwords and max term: %q", got)
	}
}

func TestBM25Scores(t *testing.T) {
	ix, err := lexical.New(lexical.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix.Put("a", lexical.Field{Text: "garden shed roof", Weight: 1})
	ix.Put("b", lexical.Field{Text: "garden party", Weight: 1})
	ix.Put("c", lexical.Field{Text: "kitchen sink", Weight: 1})
	q := ix.Analyzer().Query("shed in the garden")
	hits := ix.Search(q, 0, nil)
	if len(hits) != 2 || hits[0].ID != "a" || hits[1].ID != "b" {
		t.Fatalf("hits %+v", hits)
	}
	// By hand: N=3, avgdl=(3+2+2)/3, k1=1.2, b=0.75.
	idf := func(n float64) float64 { return math.Log(1 + (3-n+0.5)/(n+0.5)) }
	avg := 7.0 / 3
	term := func(dl float64) float64 { return 2.2 / (1 + 1.2*(0.25+0.75*dl/avg)) }
	wantA := idf(1)*term(3) + idf(2)*term(3)
	wantB := idf(2) * term(2)
	if math.Abs(hits[0].Score-wantA) > 1e-12 || math.Abs(hits[1].Score-wantB) > 1e-12 {
		t.Fatalf("scores %v %v, want %v %v", hits[0].Score, hits[1].Score, wantA, wantB)
	}
	if got := ix.IDF("garden"); math.Abs(got-idf(2)) > 1e-12 {
		t.Fatalf("IDF %v", got)
	}
	// Replace, delete, filters, limits.
	ix.Put("b", lexical.Field{Text: "kitchen party", Weight: 1})
	if hits := ix.Search(ix.Analyzer().Query("garden"), 0, nil); len(hits) != 1 || hits[0].ID != "a" {
		t.Fatalf("after replace: %+v", hits)
	}
	if !ix.Delete("a") || ix.Delete("a") || ix.Has("a") || ix.Len() != 2 {
		t.Fatal("delete")
	}
	if hits := ix.Search(ix.Analyzer().Query("kitchen"), 1, nil); len(hits) != 1 {
		t.Fatalf("k=1: %+v", hits)
	}
	if hits := ix.Search(ix.Analyzer().Query("kitchen"), 0, func(id string) bool { return id != "b" }); len(hits) != 1 || hits[0].ID != "c" {
		t.Fatalf("keep: %+v", hits)
	}
	if hits := ix.Search(lexical.Query{}, 0, nil); hits != nil {
		t.Fatalf("empty query: %+v", hits)
	}
}

func TestWeightedFieldsAndTies(t *testing.T) {
	ix, _ := lexical.New(lexical.Options{})
	ix.Put("own", lexical.Field{Text: "lisbon flights booked", Weight: 1})
	ix.Put("ctx", lexical.Field{Text: "yes done", Weight: 1}, lexical.Field{Text: "lisbon flights booked", Weight: 0.3})
	ix.Put("ignored", lexical.Field{Text: "lisbon", Weight: 0}, lexical.Field{Text: "lisbon", Weight: math.NaN()})
	hits := ix.Search(ix.Analyzer().Query("lisbon flights"), 0, nil)
	if len(hits) != 2 || hits[0].ID != "own" || hits[1].ID != "ctx" || !(hits[1].Score < hits[0].Score) {
		t.Fatalf("context fields must match, below the message itself: %+v", hits)
	}
	// Equal scores: ascending id, every time.
	for _, id := range []string{"z", "m", "a"} {
		ix.Put(id, lexical.Field{Text: "tie breaker", Weight: 1})
	}
	for range 5 {
		hits := ix.Search(ix.Analyzer().Query("tie"), 0, nil)
		if len(hits) != 3 || hits[0].ID != "a" || hits[1].ID != "m" || hits[2].ID != "z" {
			t.Fatalf("ties: %+v", hits)
		}
	}
	q := lexical.Query{"b": 1}.Add(lexical.Query{"a": 2, "b": 1}, 0.5)
	if q.String() != "a:1 b:1.5" {
		t.Fatalf("query %s", q)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, o := range []lexical.Options{{K1: -1}, {K1: math.Inf(1)}, {B: 2}, {B: -0.5}} {
		if _, err := lexical.New(o); !errors.Is(err, lexical.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := lexical.New(lexical.Options{NoLengthNorm: true}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentUse(t *testing.T) {
	ix, _ := lexical.New(lexical.Options{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := fmt.Sprintf("w%d-%d", w, i)
				ix.Put(id, lexical.Field{Text: fmt.Sprintf("message %d about topic%d", i, i%7), Weight: 1})
				_ = ix.Search(ix.Analyzer().Query("topic3 message"), 5, nil)
				if i%3 == 0 {
					ix.Delete(id)
				}
			}
		}()
	}
	wg.Wait()
	if ix.Len() != 4*(200-67) {
		t.Fatalf("Len %d", ix.Len())
	}
}
