package layerrules_test

import (
	"fmt"

	"github.com/stratamem/strata/cmd/memctl/internal/layerrules"
	"github.com/stratamem/strata/vectorstore"
)

func Example() {
	r := vectorstore.Record{ID: "x", Layer: "entity", Scope: vectorstore.Scope{Thread: "t1"},
		Text: "mathematician", Metadata: map[string]string{"name": "Ada  Lovelace", "type": "Person"}}
	layerrules.Prepare(layerrules.Entity, &r, nil)
	fmt.Println(r.Kind, r.Text, r.Metadata["scope"])
	fmt.Println(layerrules.Check(layerrules.Entity, &r))

	r.Metadata["type"] = "robot"
	fmt.Println(layerrules.Check(layerrules.Entity, &r))
	// Output:
	// entity Ada Lovelace (person): mathematician thread
	// <nil>
	// invalid memory for layer entity: metadata.type: "robot": want person, organization, place, concept or other
}
