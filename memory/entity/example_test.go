package entity_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/embed/hashing"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/chromem"
)

// The model records entities with the provided entity/update function,
// which the host routes after asking the steering layers, or with the
// spec's plain updateEntities call, which the runtime applies when it is
// recorded. Entities merge by name and type and are shown on the next turn.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "entity-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The embedded store. The hashing embedder keeps the example offline
	// and deterministic; use embed/uselite (the default model) for real.
	col, err := chromem.OpenCollection(ctx, dir, "memories", &vectorstore.Options{Dimension: 256})
	if err != nil {
		log.Fatal(err)
	}
	defer col.Close()
	store := &memory.Store{Records: col, Embedder: hashing.New(256)}

	entities, err := entity.New(store, entity.Options{}) // the one line
	if err != nil {
		log.Fatal(err)
	}
	rt, err := core.NewRuntime(core.Config{Layers: []core.AnyLayer{entities}})
	if err != nil {
		log.Fatal(err)
	}
	sess, err := rt.Start(ctx, core.RunOptions{ThreadID: "thread-1"})
	if err != nil {
		log.Fatal(err)
	}
	_ = sess.Append(ctx, core.UserMessage("Who designed the Analytical Engine?"))
	// What the model wrote: a call to the provided function, and the
	// spec's plain call naming Babbage again, spelled differently.
	call := core.FunctionCall("c1", "entity/update", `{"entities": [
		{"name": "Charles Babbage", "type": "person", "notes": "designed the Analytical Engine"},
		{"name": "Analytical Engine", "type": "concept", "notes": ["a mechanical general-purpose computer"]}]}`)
	_ = sess.Record(ctx, call) // logs it; the provided function is not applied yet
	// The host asks the steering layers, then routes what they allow.
	if d, err := sess.BeforeToolCall(ctx, call); err == nil && d.Allowed {
		out, _ := sess.ExecuteTool(ctx, d.Call)
		fmt.Println(out.Output)
		_ = sess.Append(ctx, out)
	}
	// The plain call is the spec's pseudo-tool: with no steering layer in
	// this runtime, applied as it is recorded (with one, when routed).
	_ = sess.Record(ctx, core.FunctionCall("c2", "updateEntities", `{"entities": [
		{"name": "charles  BABBAGE", "type": "person", "notes": ["Designed the Analytical Engine.", "born 1791"]}]}`))

	view, _ := sess.Assemble(ctx)
	fmt.Println(view.Band(core.BandAnchor)[0].Text())
	// Output:
	// ok: recorded 2 entities: Charles Babbage (person, new), Analytical Engine (concept, new); 2 entities remembered.
	// <known_entities>
	// - Analytical Engine (concept): a mechanical general-purpose computer
	// - Charles Babbage (person): designed the Analytical Engine; born 1791
	// </known_entities>
}
