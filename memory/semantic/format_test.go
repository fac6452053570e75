package semantic_test

import (
	"strings"
	"testing"

	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/vectorstore"
)

func TestFormat(t *testing.T) {
	sc := vectorstore.Scope{Thread: "t1", Resource: "alice"}
	r := semantic.Format.Message("semantic", sc, "user", "I moved to Berlin", "m1", "run-1", "hash-64", nil)
	if !strings.HasPrefix(r.ID, "semantic:") || r.Metadata[semantic.MetaSeq] != "0" || r.Metadata[semantic.MetaEmbedding] != "hash-64" {
		t.Errorf("message %+v", r)
	}
	if !semantic.IsMessage(r) {
		t.Error("not a message the layer reads")
	}
	semantic.Format.Prepare(&r, nil)
	if err := semantic.Format.Validate(&r); err != nil {
		t.Fatal(err)
	}
	if other := semantic.Format.Message("semantic", sc, "user", "other text", "m1", "run-2", "hash-64", nil); other.ID != r.ID {
		t.Error("one item id, two record ids")
	}
	r.Metadata[semantic.MetaRole] = "robot"
	if err := semantic.Format.Validate(&r); err == nil || !strings.Contains(err.Error(), "metadata.role") {
		t.Errorf("role: %v", err)
	}
}
