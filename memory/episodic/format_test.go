package episodic_test

import (
	"strings"
	"testing"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/memory/episodic"
	"github.com/stratamem/strata/vectorstore"
)

func TestFormat(t *testing.T) {
	r := episodic.Format.Episode("episodic", core.ScopeResource, vectorstore.Scope{Resource: "alice"}, "r1", "done", "Planned a trip", nil)
	if !strings.HasPrefix(r.ID, episodic.KindEpisode+"-") || len(r.ID) != len("episode-")+40 || r.Scope.Thread != "" {
		t.Errorf("episode %+v", r)
	}
	episodic.Format.Prepare(&r, nil)
	if err := episodic.Format.Validate(&r); err != nil {
		t.Fatal(err)
	}
	if id := episodic.Format.RecordID(&r); id != r.ID {
		t.Errorf("RecordID %q, Episode %q", id, r.ID)
	}
	if r.Metadata[episodic.MetaRun] != "r1" || r.Metadata[episodic.MetaOutcome] != "done" || episodic.Format.ScopeOf(&r) != core.ScopeResource {
		t.Errorf("metadata %v", r.Metadata)
	}
	r.Metadata[episodic.MetaTokens] = "-1"
	if err := episodic.Format.Validate(&r); err == nil || !strings.Contains(err.Error(), "metadata.tokens") {
		t.Errorf("tokens: %v", err)
	}
}
