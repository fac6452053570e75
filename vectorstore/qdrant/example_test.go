package qdrant

import (
	"context"
	"fmt"
	"log"

	"github.com/stratamem/strata/vectorstore"
)

// The example runs against the in-process protocol fake so that it is
// runnable anywhere; against a real server the URL is e.g.
// "qdrant://localhost:6334?collection=memories&dimension=3".
func Example() {
	_, addr, stop, err := serveFake()
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	ctx := context.Background()

	coll, err := vectorstore.Open(ctx, "qdrant://"+addr+"?collection=memories&dimension=3", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer coll.Close()
	err = coll.Upsert(ctx,
		vectorstore.Record{ID: "m1", Scope: vectorstore.Scope{Thread: "t1"}, Text: "likes tea", Vector: []float32{1, 0, 0}},
		vectorstore.Record{ID: "m2", Scope: vectorstore.Scope{Thread: "t2"}, Text: "likes coffee", Vector: []float32{1, 0.1, 0}},
	)
	if err != nil {
		log.Fatal(err)
	}
	ms, err := coll.Query(ctx, []float32{1, 0.1, 0}, vectorstore.QueryOptions{K: 5, Filter: vectorstore.Filter{Thread: "t1"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range ms {
		fmt.Printf("%s (point %s) %.3f\n", m.Record.Text, PointID(m.Record.ID)[:8], m.Score)
	}
	// Output: likes tea (point aa645f7a) 0.995
}
