package termsafe_test

import (
	"fmt"

	"github.com/stratamem/strata/cmd/memctl/internal/termsafe"
)

func Example() {
	planted := "User likes tea\x1b]0;pwned\x07\x1b[2J"
	fmt.Println(termsafe.Escape(planted))
	fmt.Println(termsafe.Text("line one\nline two\r"))
	// Output:
	// User likes tea\x1b]0;pwned\x07\x1b[2J
	// line one
	// line two\r
}
