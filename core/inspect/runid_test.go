package inspect_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/core/inspect"
	"github.com/stratamem/strata/storage"
)

// Two sessions of one thread under the same run id, with different logs:
// each record still re-renders the view its own session assembled (the
// second session's log does not overwrite the first's stored log).
func TestSameRunIDTwoSessions(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemory()
	rt := planRuntime(t, store, -1)
	var want [][]byte
	for visit := range 2 {
		s, err := rt.Start(ctx, core.RunOptions{RunID: "fixed", ThreadID: "t1", ResourceID: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			_ = s.Append(ctx, core.UserMessage(fmt.Sprintf("visit %d question %d", visit, i)))
			v, err := s.Assemble(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, viewBytes(t, v))
			_ = s.Record(ctx, core.AssistantMessage(fmt.Sprintf("visit %d answer %d", visit, i)))
		}
	}
	for turn, w := range want {
		rec, err := inspect.ReadAssembly(ctx, store, "u1", "t1", turn)
		if err != nil {
			t.Fatal(err)
		}
		v, err := rec.View()
		if err != nil {
			t.Fatal(err)
		}
		if got := viewBytes(t, v); !bytes.Equal(got, w) {
			t.Fatalf("turn %d re-renders another view:\n got %.300s\nwant %.300s", turn, got, w)
		}
	}
}
