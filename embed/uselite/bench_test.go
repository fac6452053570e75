package uselite

import (
	"context"
	"fmt"
	"testing"
)

// benchTexts are memory-note sized sentences (8 to 20 pieces each).
var benchTexts = []string{
	"The user prefers dark roast coffee in the morning.",
	"Alice moved to Berlin in March to join the payments team.",
	"Remind me to renew the car insurance before the end of the month.",
	"The deployment failed because the database migration timed out.",
	"Bob's daughter starts school next September.",
	"Our quarterly revenue grew by twelve percent compared to last year.",
	"The meeting with the design team was moved to Thursday at 3 pm.",
	"I am allergic to peanuts and shellfish.",
}

func benchBatch(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s (%d)", benchTexts[i%len(benchTexts)], i)
	}
	return out
}

func benchmarkEmbed(b *testing.B, batch int) {
	m := testModel(b)
	texts := benchBatch(batch)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "sentences/s")
}

// BenchmarkEmbedSingle embeds one sentence per call.
func BenchmarkEmbedSingle(b *testing.B) { benchmarkEmbed(b, 1) }

// BenchmarkEmbedBatch32 embeds 32 sentences per call.
func BenchmarkEmbedBatch32(b *testing.B) { benchmarkEmbed(b, 32) }

// BenchmarkEmbedBatch32Portable is BenchmarkEmbedBatch32 with the portable
// Go kernels (what arm64 and x86 without AVX2/FMA run).
func BenchmarkEmbedBatch32Portable(b *testing.B) {
	saved := useAVX2
	useAVX2 = false
	defer func() { useAVX2 = saved }()
	benchmarkEmbed(b, 32)
}

// BenchmarkEmbedLong embeds one text cut at MaxTokens (128 pieces).
func BenchmarkEmbedLong(b *testing.B) {
	m := testModel(b)
	g := loadGolden(b)
	text := g.Cases[len(g.Cases)-1].Text
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Embed(ctx, []string{text}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sentences/s")
}

func BenchmarkTokenize(b *testing.B) {
	m := testModel(b)
	for b.Loop() {
		for _, t := range benchTexts {
			m.Tokenizer().Encode(t)
		}
	}
}
