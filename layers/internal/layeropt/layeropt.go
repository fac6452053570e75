// Package layeropt holds the option checks the layers under layers/
// share. Each failure is a *core.ConfigError naming the layer and the
// field.
package layeropt

import (
	"errors"
	"fmt"

	"github.com/stratamem/strata/core"
)

// Error returns the *core.ConfigError for a bad option of a layer.
func Error(layer, field, reason string) error {
	return &core.ConfigError{Code: core.CodeInvalidLayer, Layer: layer, Field: field, Reason: reason}
}

// Scope returns s, or def when s is empty. A scope the runtime does not
// know is an error on the field "Scope".
func Scope(layer string, s, def core.Scope) (core.Scope, error) {
	switch s {
	case "":
		return def, nil
	case core.ScopeExecution, core.ScopeThread, core.ScopeResource, core.ScopeGlobal:
		return s, nil
	}
	return s, Error(layer, "Scope", fmt.Sprintf("unknown scope %q", s))
}

// Budget validates b; its *core.ConfigError names the layer.
func Budget(layer string, b core.Budget) error {
	err := b.Validate()
	var ce *core.ConfigError
	if errors.As(err, &ce) {
		ce.Layer = layer
	}
	return err
}

// Limit returns n, or def when n is 0. A negative n is an error on field.
func Limit[N int | int64](layer, field string, n, def N) (N, error) {
	switch {
	case n < 0:
		return n, Error(layer, field, "negative")
	case n == 0:
		return def, nil
	}
	return n, nil
}
