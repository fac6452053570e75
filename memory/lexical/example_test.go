package lexical_test

import (
	"fmt"

	"github.com/stratamem/strata/memory/lexical"
)

func Example() {
	ix, _ := lexical.New(lexical.Options{})
	// A terse reply indexed with the message it answers as context.
	ix.Put("m1", lexical.Field{Text: "Did you book the flights to Lisbon?", Weight: 1})
	ix.Put("m2", lexical.Field{Text: "Yes, bought them yesterday!", Weight: 1},
		lexical.Field{Text: "Did you book the flights to Lisbon?", Weight: 0.5})
	ix.Put("m3", lexical.Field{Text: "The dentist moved my appointment.", Weight: 1})

	q := ix.Analyzer().Query("When did I buy the Lisbon flights?")
	fmt.Println(q)
	for _, h := range ix.Search(q, 10, nil) {
		fmt.Printf("%s %.3f\n", h.ID, h.Score)
	}
	// Output:
	// buy:1 flight:1 lisbon:1
	// m2 1.516
	// m1 0.961
}
