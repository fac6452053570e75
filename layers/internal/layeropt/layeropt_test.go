package layeropt

import (
	"errors"
	"testing"

	"github.com/stratamem/strata/core"
)

func TestScope(t *testing.T) {
	if s, err := Scope("l", "", core.ScopeThread); err != nil || s != core.ScopeThread {
		t.Fatalf("empty: %q, %v", s, err)
	}
	if s, err := Scope("l", core.ScopeGlobal, core.ScopeThread); err != nil || s != core.ScopeGlobal {
		t.Fatalf("global: %q, %v", s, err)
	}
	_, err := Scope("l", "galaxy", core.ScopeThread)
	var ce *core.ConfigError
	if !errors.As(err, &ce) || ce.Layer != "l" || ce.Field != "Scope" || ce.Code != core.CodeInvalidLayer {
		t.Fatalf("unknown scope: %v", err)
	}
}

func TestBudgetNamesTheLayer(t *testing.T) {
	if err := Budget("l", core.Fixed(10)); err != nil {
		t.Fatal(err)
	}
	var ce *core.ConfigError
	if err := Budget("l", core.Fixed(-1)); !errors.As(err, &ce) || ce.Layer != "l" {
		t.Fatalf("negative budget: %v", err)
	}
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		n, want int64
		bad     bool
	}{{0, 7, false}, {3, 3, false}, {-1, -1, true}} {
		got, err := Limit("l", "Max", tc.n, 7)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("Limit(%d) = %d, %v", tc.n, got, err)
		}
	}
}
