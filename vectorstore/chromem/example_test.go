package chromem_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

func ExampleOpenCollection() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "chromem-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	coll, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: 2})
	if err != nil {
		log.Fatal(err)
	}
	if err := coll.Upsert(ctx, vectorstore.Record{ID: "a", Text: "hello", Vector: []float32{3, 4}}); err != nil {
		log.Fatal(err)
	}
	coll.Close()

	// Reopen: the dimension comes from disk; the acknowledged write is there,
	// stored as a unit vector because the collection is cosine.
	coll, err = chromem.OpenCollection(ctx, dir, "memories", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer coll.Close()
	r, err := coll.Get(ctx, "a")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Text, r.Vector, coll.Info().Dimension)
	// Output: hello [0.6 0.8] 2
}
