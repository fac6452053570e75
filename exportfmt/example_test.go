package exportfmt_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/stratamem/strata/exportfmt"
	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/vectorstore"
)

func Example() {
	var buf bytes.Buffer
	w := exportfmt.NewWriter(&buf)
	_ = w.WriteHeader(exportfmt.Header{Embedder: "hash-2", Dimension: 2, Distance: "cosine"})
	_ = w.Write(&vectorstore.Record{ID: "a", Layer: "scratchpad", Kind: "note", Text: "plan: ship",
		Vector: []float32{0.6, 0.8}, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)})
	// The runtime's state follows the records, value bytes as they are.
	_ = w.WriteState(storage.Key{Scope: "thread", ScopeID: "t1", Layer: "todo", Name: "state"}, []byte(`{"items":["ship"]}`))
	_ = w.Flush()
	fmt.Print(buf.String())

	// A bad line is reported with its number; reading goes on.
	in := buf.String() + "{\"id\": 7}\n"
	r := exportfmt.NewReader(strings.NewReader(in))
	for {
		it, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case it.Header != nil:
			fmt.Println("header, dimension", it.Header.Dimension)
		case it.State != nil:
			fmt.Printf("state %s: %s\n", it.State.Key.Key(), it.State.Value)
		default:
			fmt.Println("record", it.Record.ID, it.Record.Vector)
		}
	}
	// Output:
	// {"memctl_export":2,"embedder":"hash-2","dimension":2,"distance":"cosine"}
	// {"id":"a","layer":"scratchpad","kind":"note","text":"plan: ship","vector":[0.6,0.8],"created_at":"2026-01-02T03:04:05.000006Z"}
	// {"state":{"scope":"thread","scope_id":"t1","layer":"todo","name":"state"},"value":"eyJpdGVtcyI6WyJzaGlwIl19"}
	// header, dimension 2
	// record a [0.6 0.8]
	// state thread/t1/todo/state: {"items":["ship"]}
	// error: line 4: field "id": cannot use a JSON number as string
}
