package uselite_test

import (
	"context"
	"fmt"
	"log"

	"github.com/stratamem/strata/embed"
	"github.com/stratamem/strata/embed/uselite"
)

// This example needs the model installed (`make model`), so it is compiled
// but not run by go test; the package's tests check the same behaviour.
func Example() {
	m, err := uselite.Default() // if missing, the error says to set STRATA_MODEL_DIR
	if err != nil {
		log.Fatal(err)
	}
	vecs, err := m.Embed(context.Background(), []string{
		"A man is playing a guitar.",
		"Someone is strumming a guitar on stage.",
		"The stock market fell sharply this morning.",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Model(), m.Dimension())
	fmt.Println(embed.Cosine(vecs[0], vecs[1]) > embed.Cosine(vecs[0], vecs[2]))
}
