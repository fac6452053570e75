package providertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
)

// ProviderError fails the test unless a call failed with a
// *provider.Error (which matches provider.ErrProvider) and returned no
// response: a failure is never a partial answer.
func ProviderError(t testing.TB, resp *provider.Response, err error) *provider.Error {
	t.Helper()
	if resp != nil {
		t.Fatalf("a failed call returned a response: %+v", resp)
	}
	var perr *provider.Error
	if !errors.As(err, &perr) || !errors.Is(err, provider.ErrProvider) {
		t.Fatalf("err = %v (%T), want *provider.Error", err, err)
	}
	return perr
}

// MissTurns drives the re-anchoring scenario through model m: a session
// whose anchored layer holds a large reference that never changes, three
// turns each reported to the runtime as a first round, and expire called
// before the third so the provider's cache is gone by then. It fails the
// test if a view re-anchors before the miss, and returns the session and
// the three cache reports; CheckReanchored then checks the next view.
func MissTurns(t testing.TB, m provider.Model, expire func()) (*core.Session, []core.CacheReport) {
	t.Helper()
	ctx := context.Background()
	doc := strings.Repeat("Reference material that holds still. ", 400)
	s := StartSession(t, core.Config{System: []core.Item{core.SystemMessage("You answer from the reference.")},
		Layers: []core.AnyLayer{TextLayer("reference", core.SlotRAG, core.PlacementAnchor, &doc)}})
	var reports []core.CacheReport
	for turn := 1; turn <= 3; turn++ {
		if turn == 3 {
			expire()
		}
		Must(t, s.Append(ctx, core.UserMessage(fmt.Sprint("question ", turn))))
		v := Assemble(t, s)
		if turn > 1 && v.Usage.Epoch.Reanchored {
			t.Fatalf("turn %d re-anchored early: %+v", turn, v.Usage.Epoch)
		}
		resp, err := m.Respond(ctx, provider.Request{View: v, ThreadID: "thread-1"})
		if err != nil {
			t.Fatal(err)
		}
		report := resp.Cache
		report.FirstRound = true
		s.ReportCache(report)
		reports = append(reports, report)
		Must(t, s.Record(ctx, resp.Items...))
	}
	return s, reports
}

// CheckReanchored checks that the view after a reported first-round miss
// starts a new epoch, for the reason cache-miss.
func CheckReanchored(t testing.TB, s *core.Session) {
	t.Helper()
	Must(t, s.Append(context.Background(), core.UserMessage("question 4")))
	if ep := Assemble(t, s).Usage.Epoch; !ep.Reanchored || ep.ReanchorReason != core.ReasonCacheMiss {
		t.Fatalf("epoch after the miss = %+v", ep)
	}
}
