package cachesim_test

import (
	"fmt"
	"time"

	"github.com/stratamem/strata/cachesim"
)

// An agent loop against Anthropic: the system prompt carries a 1h breakpoint,
// the last message a rolling 5m breakpoint that the next turn finds through
// the 20-block lookback.
func Example() {
	sim, err := cachesim.NewAnthropic(cachesim.AnthropicOptions{})
	if err != nil {
		panic(err)
	}
	system := cachesim.TextBlock("You are a careful assistant. <tools...>", 3000).WithBreakpoint(cachesim.TTL1h)
	history := []cachesim.Block{system}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var tot cachesim.Totals
	for turn := range 3 {
		msg := cachesim.TextBlock(fmt.Sprintf("user turn %d", turn), 400)
		reply := cachesim.TextBlock(fmt.Sprintf("assistant turn %d", turn), 600)
		// The breakpoint rides the newest message; older ones lose it.
		blocks := append(append([]cachesim.Block(nil), history...), msg.WithBreakpoint(cachesim.TTL5m))
		u, err := sim.Send(cachesim.Request{At: start.Add(time.Duration(turn) * time.Minute), Model: "claude-sonnet-4-5", Blocks: blocks})
		if err != nil {
			panic(err)
		}
		fmt.Printf("turn %d: read=%d write5m=%d write1h=%d uncached=%d cost=$%.5f\n",
			turn, u.ReadTokens, u.Write5mTokens, u.Write1hTokens, u.UncachedTokens, u.Cost)
		tot.Add(u)
		history = append(history, msg, reply)
	}
	fmt.Printf("hit ratio %.2f, total $%.5f\n", tot.HitRatio(), tot.Cost)
	// Output:
	// turn 0: read=0 write5m=400 write1h=3000 uncached=0 cost=$0.01950
	// turn 1: read=3400 write5m=1000 write1h=0 uncached=0 cost=$0.00477
	// turn 2: read=4400 write5m=1000 write1h=0 uncached=0 cost=$0.00507
	// hit ratio 0.59, total $0.02934
}

// OpenAI caches without breakpoints; hits come in 128-token steps from 1024.
func ExampleOpenAI() {
	sim, err := cachesim.NewOpenAI(cachesim.OpenAIOptions{})
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	prefix := cachesim.TextBlock("instructions and tools", 1800)
	for i, q := range []string{"first question", "second question"} {
		u, err := sim.Send(cachesim.Request{At: at.Add(time.Duration(i) * time.Minute), Model: "gpt-5",
			Blocks: []cachesim.Block{prefix, cachesim.TextBlock(q, 50)}})
		if err != nil {
			panic(err)
		}
		fmt.Printf("read=%d uncached=%d\n", u.ReadTokens, u.UncachedTokens)
	}
	// Output:
	// read=0 uncached=1850
	// read=1792 uncached=58
}
