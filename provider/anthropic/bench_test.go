package anthropic

import (
	"testing"

	"github.com/stratamem/strata/provider/internal/providertest"
)

func BenchmarkBuildParams(b *testing.B) {
	v := providertest.BenchView(b)
	m, err := New(Options{Model: "claude-sonnet-4-5", APIKey: "k"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := m.buildParams(v, 1024, ""); err != nil {
			b.Fatal(err)
		}
	}
}
