package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory"
	"github.com/stratamem/strata/memory/entity"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/memory/observations"
	"github.com/stratamem/strata/memory/scratchpad"
	"github.com/stratamem/strata/memory/semantic"
	"github.com/stratamem/strata/memory/temporal"
	"github.com/stratamem/strata/vectorstore"
)

// formats are the record formats of strata's memory layers, in the order
// memctl shows them. add and edit run every record through its layer's
// Prepare and Validate before it is embedded and written, so what memctl
// writes is what the layer reads back; the vector store then applies its
// own validation.
var formats = []memory.RecordFormat{episodic.Format, semantic.Format, entity.Format, observations.Format, temporal.Format, scratchpad.Format}

// layerTypes lists the layer types.
func layerTypes() string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Type()
	}
	return strings.Join(names, ", ")
}

// formatOf returns the record format of a layer type.
func formatOf(typ string) (memory.RecordFormat, bool) {
	i := slices.IndexFunc(formats, func(f memory.RecordFormat) bool { return f.Type() == typ })
	if i < 0 {
		return nil, false
	}
	return formats[i], true
}

// scopeOf is the layer scope of a record: its layer's rule, or what its
// scope keys say for a layer memctl does not know.
func scopeOf(r *vectorstore.Record) core.Scope {
	if f, ok := formatOf(r.Layer); ok {
		return f.ScopeOf(r)
	}
	return memory.KeyScope(r.Scope)
}

// completeLayers completes --layer.
func completeLayers(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	out := make([]string, 0, len(formats))
	for _, f := range formats {
		out = append(out, f.Type()+"\t"+f.Doc())
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completeKinds(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, f := range formats {
		for _, k := range f.Kinds() {
			out = append(out, k+"\t"+f.Type())
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
