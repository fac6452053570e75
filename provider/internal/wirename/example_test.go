package wirename_test

import (
	"fmt"

	"github.com/stratamem/strata/provider/internal/wirename"
)

// A provided function travels under its wire name and comes back to its
// own through the request's table.
func Example() {
	wire := wirename.Name("notes/add")
	fmt.Println(wire)
	// Output: notes__add
}
