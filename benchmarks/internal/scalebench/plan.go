package scalebench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stratamem/strata/core"
)

// Layout is how a total of messages is spread over resources (users).
type Layout string

const (
	// One puts every message in one resource: one user's whole history.
	One Layout = "one"
	// Spread divides the same total over SpreadResources resources.
	Spread Layout = "spread"
)

// SpreadResources is the number of resources of the Spread layout.
const SpreadResources = 1000

// Seed is the generator's seed: every figure is measured on the same text.
const Seed = 20261201

// Session lengths of the generated conversations (messages, user and
// assistant alternating, user first).
const (
	minConvLen = 20
	maxConvLen = 50
)

// historyEnd is when the generated history ends: every loaded message is
// older, so the messages the probes write now come after it.
var historyEnd = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Conversation is one generated session of one resource.
type Conversation struct {
	Resource string
	Thread   string
	// Index is the position in the plan.
	Index int
	// Msgs is the number of messages.
	Msgs int
	// Start is the first message's time; the others follow at
	// MessageGap intervals.
	Start time.Time
}

// MessageGap is the time between two messages of a conversation.
const MessageGap = 40 * time.Second

// resourceName names resource i.
func resourceName(i int) string { return fmt.Sprintf("user-%04d", i) }

// ProbeResource is the resource the measurements run on: the only one of
// layout One, one in the middle of layout Spread.
func ProbeResource(l Layout) string {
	if l == Spread {
		return resourceName(SpreadResources / 2)
	}
	return resourceName(0)
}

// Resources is the number of resources of a layout.
func Resources(l Layout) int {
	if l == Spread {
		return SpreadResources
	}
	return 1
}

// Plan lists the conversations holding total messages in layout l,
// deterministically. Conversations of one resource are a few hours to a
// day apart and end before historyEnd.
func Plan(l Layout, total int) []Conversation {
	nres := Resources(l)
	var out []Conversation
	for ri := 0; ri < nres; ri++ {
		n := total / nres
		if ri < total%nres {
			n++
		}
		res := resourceName(ri)
		r := rand.New(rand.NewPCG(Seed, uint64(ri)))
		var lens []int
		for left := n; left > 0; {
			k := minConvLen + 2*r.IntN((maxConvLen-minConvLen)/2+1)
			k = min(k, left)
			lens = append(lens, k)
			left -= k
		}
		// Back from historyEnd: the last conversation ends a day before.
		t := historyEnd.Add(-24 * time.Hour)
		starts := make([]time.Time, len(lens))
		for i := len(lens) - 1; i >= 0; i-- {
			t = t.Add(-time.Duration(lens[i]) * MessageGap)
			starts[i] = t
			t = t.Add(-time.Duration(4+r.IntN(20)) * time.Hour)
		}
		for i, k := range lens {
			out = append(out, Conversation{Resource: res, Thread: fmt.Sprintf("%s-s%05d", res, i), Msgs: k, Start: starts[i]})
		}
	}
	for i := range out {
		out[i].Index = i
	}
	return out
}

// Items returns the conversation's messages, user first, alternating, each
// with a deterministic item id (so appending the same message again, as a
// resumed load does, writes the same record).
func (c Conversation) Items() []core.Item {
	g := newGen(Seed, c.Thread)
	t := g.pickTopic()
	out := make([]core.Item, c.Msgs)
	for j := range out {
		if j%2 == 0 {
			if g.chance(0.2) {
				t = g.pickTopic()
			}
			out[j] = core.UserMessage(g.userMessage(t))
		} else {
			out[j] = core.AssistantMessage(g.assistantMessage(t))
		}
		out[j].ID = fmt.Sprintf("%s-m%02d", c.Thread, j)
	}
	return out
}

// MessageTime is the time of message j.
func (c Conversation) MessageTime(j int) time.Time {
	return c.Start.Add(time.Duration(j) * MessageGap)
}

// probeConversation is the text the probes append: a new conversation of
// the resource, written now.
func probeItems(key string, n int) []core.Item {
	c := Conversation{Thread: "probe-" + key, Msgs: n}
	items := c.Items()
	for i := range items {
		items[i].ID = "" // a typical host gives messages no id
	}
	return items
}
