package pgvector

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"testing"
)

var flatSeeds = []string{
	`{}`, ` { } `, `{"a": "b"}`, `{"a":"b","c":"d"}`, `{"embedding": "hash-512", "message": "semantic:0364e9"}`,
	`{"ä": "ö€"}`, `{"a": "b\"c"}`, `{"a": "\u00e9"}`, `{"a": null}`, `{"a": 1}`, `{"a": "b",}`, `{"a" "b"}`,
	`{"a": "b"} x`, `{"a": "b"`, `{"a": {"b": "c"}}`, `[]`, `"a"`, "{\"a\": \"\xff\"}", "{\"a\": \"\x01\"}",
	`{"a": "b", "a": "c"}`, `{"w": 1.5, "x": 0.30000001192092896, "y": 3}`, `{"w": -0}`, `{"w": 1e-10, "x": 2E+3}`,
	`{"w": 01}`, `{"w": 1.}`, `{"w": .5}`, `{"w": +1}`, `{"w": 1e}`, `{"w": 1e400}`, `{"w": 3.5e38}`, `{"w": 1.e5}`,
	`{"w": -}`, `{"w": 1, "v": "s"}`, `{"w": 0.0000000001}`, `{"": ""}`, `{"": 0}`,
}

// sameAsJSON checks flatStrings and flatFloat32s against encoding/json on
// in: when they decode, encoding/json decodes the same.
func sameAsJSON(t *testing.T, in string) {
	t.Helper()
	if m, ok := flatStrings([]byte(in)); ok {
		var want map[string]string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("flatStrings(%q) = %v, encoding/json fails: %v", in, m, err)
		}
		if !maps.Equal(m, want) {
			t.Fatalf("flatStrings(%q) = %v, encoding/json %v", in, m, want)
		}
	}
	if m, ok := flatFloat32s([]byte(in)); ok {
		var want map[string]float32
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("flatFloat32s(%q) = %v, encoding/json fails: %v", in, m, err)
		}
		if len(m) != len(want) {
			t.Fatalf("flatFloat32s(%q) = %v, encoding/json %v", in, m, want)
		}
		for k, v := range want {
			if g, ok := m[k]; !ok || math.Float32bits(g) != math.Float32bits(v) {
				t.Fatalf("flatFloat32s(%q)[%q] = %v, encoding/json %v", in, k, g, v)
			}
		}
	}
}

func TestFlatJSON(t *testing.T) {
	for _, in := range flatSeeds {
		sameAsJSON(t, in)
	}
	// The common inputs take the fast path.
	for _, in := range []string{`{"embedding": "hash-512", "message": "x"}`, `{"ä": "ö€"}`, `{}`} {
		if _, ok := flatStrings([]byte(in)); !ok {
			t.Fatalf("flatStrings(%q) declined", in)
		}
	}
	if _, ok := flatFloat32s([]byte(`{"w": 1.5, "x": 0.30000001192092896, "y": 3, "z": 1e-10}`)); !ok {
		t.Fatal("flatFloat32s declined plain numbers")
	}
	// Random objects as PostgreSQL prints them: every weight round trips
	// bit for bit, every string exactly.
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		strs, nums := map[string]string{}, map[string]float32{}
		for j := range r.IntN(8) {
			k := fmt.Sprintf("k%d-%c", j, rune(0x20+r.IntN(0x3000)))
			strs[k] = fmt.Sprintf("v%c%d", rune(0x20+r.IntN(0x3000)), r.Int())
			nums[k] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10)))
		}
		for _, v := range []any{strs, nums} {
			b, _ := json.Marshal(v)
			sameAsJSON(t, string(b))
		}
		if m, ok := flatFloat32s(mustJSON(nums)); ok && !maps.Equal(m, nums) {
			t.Fatalf("weights %v decoded as %v", nums, m)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func FuzzFlatJSON(f *testing.F) {
	for _, in := range flatSeeds {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) { sameAsJSON(t, in) })
}

// BenchmarkFlatJSON compares the fast decoders with encoding/json on a
// message record's metadata and terms as PostgreSQL prints them.
func BenchmarkFlatJSON(b *testing.B) {
	meta := []byte(`{"run": "load-user-0000-s00508", "seq": "17", "next": "semantic:1975cc215d808f033f2fb88119fd5c3b36228df2", "prev": "semantic:02ae886f234ab95583a81a68b27bf0ac8e1c03c0", "role": "assistant", "item_id": "user-0000-s00508-m17", "embedding": "hash-512"}`)
	terms := []byte(`{"6th": 0.5, "get": 1, "ine": 0.5, "leo": 0.5, "old": 0.25, "tri": 1, "2056": 0.5, "book": 2.25, "cost": 0.5, "euro": 0.5, "good": 0.25, "keep": 1.25, "next": 0.5, "note": 2, "tell": 0.5, "visa": 1.25, "week": 0.5, "91449": 0.5, "april": 0.5, "arriv": 0.5, "board": 2, "check": 1, "first": 0.5, "hotel": 1, "layov": 0.5, "order": 0.5, "quiet": 1}`)
	b.Run("metadata/flat", func(b *testing.B) {
		for b.Loop() {
			flatStrings(meta)
		}
	})
	b.Run("metadata/json", func(b *testing.B) {
		for b.Loop() {
			var m map[string]string
			_ = json.Unmarshal(meta, &m)
		}
	})
	b.Run("terms/flat", func(b *testing.B) {
		for b.Loop() {
			flatFloat32s(terms)
		}
	})
	b.Run("terms/json", func(b *testing.B) {
		for b.Loop() {
			var m map[string]float32
			_ = json.Unmarshal(terms, &m)
		}
	})
}
