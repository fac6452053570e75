package pgvector_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stratamem/strata/vectorstore"
	_ "github.com/stratamem/strata/vectorstore/pgvector" // registers postgres:// and postgresql://
)

// Open a pgvector collection by URL, store two memories and recall the
// nearest. The DSN comes from scripts/pg.sh up; TestExample runs this
// example against it and checks the output.
func Example() {
	ctx := context.Background()
	url := os.Getenv("STRATA_TEST_PG_DSN") + "&collection=example_memories&dimension=3&ef_search=64"
	coll, err := vectorstore.Open(ctx, url, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer coll.Close()

	err = coll.Upsert(ctx,
		vectorstore.Record{ID: "tea", Layer: "semantic", Text: "prefers green tea", Vector: []float32{0.9, 0.1, 0}},
		vectorstore.Record{ID: "city", Layer: "semantic", Text: "lives in Lyon", Vector: []float32{0, 0.2, 0.9}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	matches, err := coll.Query(ctx, []float32{1, 0, 0}, vectorstore.QueryOptions{K: 1, Filter: vectorstore.Filter{Layer: "semantic"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range matches {
		fmt.Printf("%s: %s (%.2f)\n", m.Record.ID, m.Record.Text, m.Score)
	}
}

func TestExample(t *testing.T) {
	if os.Getenv("STRATA_TEST_PG_DSN") == "" {
		if os.Getenv("STRATA_REQUIRE_PG") == "1" {
			t.Fatal("STRATA_TEST_PG_DSN is not set but STRATA_REQUIRE_PG=1; run: scripts/pg.sh up")
		}
		t.Skip("STRATA_TEST_PG_DSN is not set; run: scripts/pg.sh up")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	func() {
		defer func() { os.Stdout = stdout }()
		Example()
	}()
	w.Close()
	got := string(<-done)
	r.Close()
	if want := "tea: prefers green tea (0.99)\n"; got != want {
		t.Fatalf("Example printed %q, want %q", got, want)
	}
}
