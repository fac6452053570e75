package server_test

import (
	"fmt"
	"testing"

	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/server"
)

// BenchmarkHTTP measures whole requests through the API on an embedded
// store with the default model: authentication, rate limiting, tracing,
// the layer write or the search, and the JSON both ways.
func BenchmarkHTTP(b *testing.B) {
	needModel(b)
	for _, c := range []string{"record_fact", "search"} {
		b.Run(c, func(b *testing.B) {
			_, hs := serve(b, b.TempDir(), server.Options{Rate: -1})
			for i := range 200 {
				call(b, hs, key7, "POST", "/v1/facts", server.FactsRequest{Facts: []temporal.Input{
					{Subject: "user", Predicate: fmt.Sprintf("seed %d", i), Value: fmt.Sprintf("value %d", i)}}}, nil)
			}
			b.ResetTimer()
			for i := range b.N {
				switch c {
				case "record_fact":
					if st := call(b, hs, key7, "POST", "/v1/facts", server.FactsRequest{Facts: []temporal.Input{
						{Subject: "user", Predicate: fmt.Sprintf("p %d", i), Value: "v"}}}, nil); st != 200 {
						b.Fatal(st)
					}
				case "search":
					if st := call(b, hs, key7, "POST", "/v1/search", server.SearchRequest{Query: "what is value 42", K: 10}, nil); st != 200 {
						b.Fatal(st)
					}
				}
			}
		})
	}
}
