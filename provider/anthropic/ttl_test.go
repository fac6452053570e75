package anthropic_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stratamem/strata/provider"
	"github.com/stratamem/strata/provider/anthropic"
	pt "github.com/stratamem/strata/provider/internal/providertest"
)

// A request's CacheTTL sets the lifetime every breakpoint asks for: one
// hour past the default five minutes, five when it asks for at most that
// on an adapter set to one hour; no request lifetime leaves the option,
// and the default request carries no ttl at all.
func TestRequestCacheTTL(t *testing.T) {
	ctx := context.Background()
	ttl := regexp.MustCompile(`"cache_control":\{[^}]*\}`)
	cases := []struct {
		opt    string
		reqTTL time.Duration
		want   string // the cache_control objects' text, all equal
	}{
		{"", 0, `"cache_control":{"type":"ephemeral"}`},
		{"", time.Hour, `"cache_control":{"ttl":"1h","type":"ephemeral"}`},
		{"", 20 * time.Minute, `"cache_control":{"ttl":"1h","type":"ephemeral"}`},
		{"", 5 * time.Minute, `"cache_control":{"type":"ephemeral"}`},
		{"1h", 0, `"cache_control":{"ttl":"1h","type":"ephemeral"}`},
		{"1h", 5 * time.Minute, `"cache_control":{"ttl":"5m","type":"ephemeral"}`},
	}
	for _, c := range cases {
		f := newFakeAnthropic(t)
		m := newModel(t, f, anthropic.Options{Model: "claude-sonnet-4-5", CacheTTL: c.opt})
		if _, err := m.Respond(ctx, provider.Request{View: pt.PlainView(t), ThreadID: "t1", CacheTTL: c.reqTTL}); err != nil {
			t.Fatal(err)
		}
		marks := ttl.FindAllString(string(f.Body(0)), -1)
		if len(marks) == 0 {
			t.Fatalf("option %q, request %v: no breakpoint in %s", c.opt, c.reqTTL, f.Body(0))
		}
		for _, got := range marks {
			if got != c.want {
				t.Fatalf("option %q, request %v: %s, want %s", c.opt, c.reqTTL, got, c.want)
			}
		}
	}
}
