package vectorstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/stratamem/strata/vectorstore"
	_ "github.com/stratamem/strata/vectorstore/chromem" // registers chromem://
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "vectorstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	coll, err := vectorstore.Open(ctx, "chromem://"+dir+"?collection=memories&dimension=3", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer coll.Close()

	t0 := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	err = coll.Upsert(ctx,
		vectorstore.Record{ID: "m1", Layer: "semantic", Kind: "fact", Scope: vectorstore.Scope{Resource: "user-1"},
			Text: "prefers tea", Vector: []float32{1, 0, 0}, CreatedAt: t0},
		vectorstore.Record{ID: "m2", Layer: "semantic", Kind: "fact", Scope: vectorstore.Scope{Resource: "user-1"},
			Text: "lives in Lyon", Vector: []float32{0, 1, 0}, CreatedAt: t0.Add(time.Hour),
			Metadata: map[string]string{"source": "chat"}},
		vectorstore.Record{ID: "m3", Layer: "semantic", Kind: "fact", Scope: vectorstore.Scope{Resource: "user-2"},
			Text: "prefers coffee", Vector: []float32{1, 0.1, 0}, CreatedAt: t0},
	)
	if err != nil {
		log.Fatal(err)
	}

	// Top-2 for user-1 only: scope filters are exact, other users never leak in.
	matches, err := coll.Query(ctx, []float32{0.9, 0.2, 0}, vectorstore.QueryOptions{
		K:      2,
		Filter: vectorstore.Filter{Resource: "user-1"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range matches {
		fmt.Printf("%s %.3f %s\n", m.Record.ID, m.Score, m.Record.Text)
	}

	// Bad input is a typed error and writes nothing.
	err = coll.Upsert(ctx, vectorstore.Record{ID: "bad", Vector: []float32{1, 2}})
	var verr *vectorstore.Error
	if errors.As(err, &verr) {
		fmt.Println(verr.Code, verr.Field, errors.Is(err, vectorstore.ErrDimensionMismatch))
	}
	n, _ := coll.Count(ctx, vectorstore.Filter{})
	fmt.Println("records:", n)
	// Output:
	// m1 0.976 prefers tea
	// m2 0.217 lives in Lyon
	// DIMENSION_MISMATCH vector true
	// records: 3
}

func ExampleCollection_List() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vectorstore-example")
	defer os.RemoveAll(dir)
	coll, err := vectorstore.Open(ctx, "chromem://"+dir, &vectorstore.Options{Dimension: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer coll.Close()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 5; i++ {
		_ = coll.Upsert(ctx, vectorstore.Record{ID: fmt.Sprint("r", i), Vector: []float32{1, float32(i)}, CreatedAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	// Newest first, two per page.
	opts := vectorstore.ListOptions{Limit: 2, Order: vectorstore.Descending}
	for page := 1; ; page++ {
		recs, next, err := coll.List(ctx, opts)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range recs {
			fmt.Print(page, ":", r.ID, " ")
		}
		if next == "" {
			break
		}
		opts.PageToken = next
	}
	fmt.Println()
	// Output: 1:r4 1:r3 2:r2 2:r1 3:r0
}

// A read-modify-write that never loses a concurrent writer's update: write
// back with UpsertIf at the revision read, and start again on a conflict.
func ExampleCollection_UpsertIf() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "vectorstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	coll, err := vectorstore.Open(ctx, "chromem://"+dir+"?dimension=2", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer coll.Close()

	// Create only if absent: expected revision 0.
	if _, err := coll.UpsertIf(ctx, vectorstore.Record{ID: "user-1", Kind: "entity", Text: "likes tea", Vector: []float32{1, 0}}, 0); err != nil {
		log.Fatal(err)
	}
	addNote := func(note string) error {
		for {
			rec, err := coll.Get(ctx, "user-1")
			if err != nil {
				return err
			}
			rec.Text += "; " + note
			_, err = coll.UpsertIf(ctx, rec, rec.Revision)
			if !errors.Is(err, vectorstore.ErrConflict) {
				return err // nil once written
			}
			// Someone wrote user-1 since Get: read it again.
		}
	}
	if err := addNote("lives in Lyon"); err != nil {
		log.Fatal(err)
	}
	rec, err := coll.Get(ctx, "user-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Text)

	// A stale revision writes nothing.
	_, err = coll.UpsertIf(ctx, vectorstore.Record{ID: "user-1", Text: "stale", Vector: []float32{1, 0}}, rec.Revision-1)
	fmt.Println(errors.Is(err, vectorstore.ErrConflict))
	// Output:
	// likes tea; lives in Lyon
	// true
}
