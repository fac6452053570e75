package uselite

import (
	"testing"

	"github.com/stratamem/strata/embed"
)

func TestModelIDIsEmbedDefault(t *testing.T) {
	if ModelID != embed.DefaultModelID {
		t.Fatalf("uselite.ModelID %q, embed.DefaultModelID %q: embed.ParseSpec would not know the default model's id", ModelID, embed.DefaultModelID)
	}
}
