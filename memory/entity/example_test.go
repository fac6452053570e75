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

// The model records entities with the spec's updateEntities call (or the
// provided entity/update function); they merge by name and type and are
// shown on the next turn.
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
	// What the model wrote: two calls naming Babbage, spelled differently.
	_ = sess.Record(ctx,
		core.FunctionCall("c1", "updateEntities", `{"entities": [
			{"name": "Charles Babbage", "type": "person", "notes": "designed the Analytical Engine"},
			{"name": "Analytical Engine", "type": "concept", "notes": ["a mechanical general-purpose computer"]}]}`),
		core.FunctionCall("c2", "updateEntities", `{"entities": [
			{"name": "charles  BABBAGE", "type": "person", "notes": ["Designed the Analytical Engine.", "born 1791"]}]}`))

	view, _ := sess.Assemble(ctx)
	fmt.Println(view.Band(core.BandAnchor)[0].Text())
	// Output:
	// <known_entities>
	// - Analytical Engine (concept): a mechanical general-purpose computer
	// - Charles Babbage (person): designed the Analytical Engine; born 1791
	// </known_entities>
}
