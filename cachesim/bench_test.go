package cachesim

import (
	"strconv"
	"testing"
	"time"
)

// bench200 is a 200-block request: a system block and 199 history blocks,
// with a system breakpoint and a rolling one on the last block.
func bench200() []Block {
	blocks := make([]Block, 200)
	blocks[0] = bp(TextBlock("system", 3000))
	for i := 1; i < 200; i++ {
		blocks[i] = TextBlock("message "+strconv.Itoa(i), 150)
	}
	blocks[199] = bp(blocks[199])
	return blocks
}

func benchSend(b *testing.B, s Simulator, newTail bool) {
	blocks := bench200()
	at := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if newTail { // a new last message every request: one write per op
			blocks[199] = bp(TextBlock("tail "+strconv.Itoa(i), 150))
		}
		at = at.Add(time.Second)
		if _, err := s.Send(Request{At: at, Model: sonnet, Blocks: blocks}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSend200Blocks(b *testing.B) {
	b.Run("anthropic/hit", func(b *testing.B) { benchSend(b, newAnthropic(b, AnthropicOptions{}), false) })
	b.Run("anthropic/new-tail", func(b *testing.B) { benchSend(b, newAnthropic(b, AnthropicOptions{}), true) })
	b.Run("openai/hit", func(b *testing.B) { benchSend(b, newOpenAI(b, OpenAIOptions{}), false) })
	b.Run("openai/new-tail", func(b *testing.B) { benchSend(b, newOpenAI(b, OpenAIOptions{}), true) })
}
