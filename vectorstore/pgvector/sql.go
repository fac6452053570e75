package pgvector

import (
	"strconv"
	"strings"

	"github.com/stratamem/strata/vectorstore/driver"
)

// sqlBuilder collects the parameters of one statement. Every value a user
// supplies becomes a $n parameter; only column names and operators, fixed in
// this file, are ever spliced into SQL text.
type sqlBuilder struct {
	args []any
}

// arg adds a parameter and returns its placeholder.
func (b *sqlBuilder) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// and appends cond to a WHERE clause (which may be empty).
func (b *sqlBuilder) and(where, cond string) string {
	if where == "" {
		return " WHERE " + cond
	}
	return where + " AND " + cond
}

// filter renders f as a WHERE clause (empty for the zero filter) with the
// semantics of driver.Filter.Matches: every set field must match, empty
// strings do not constrain.
func (b *sqlBuilder) filter(f *driver.Filter) string {
	var conds []string
	if len(f.IDs) > 0 {
		conds = append(conds, "id = ANY("+b.arg(f.IDs)+"::text[])")
	}
	for _, eq := range []struct{ col, v string }{
		{"layer", f.Layer}, {"kind", f.Kind}, {"thread", f.Thread}, {"resource", f.Resource},
	} {
		if eq.v != "" {
			conds = append(conds, eq.col+" = "+b.arg(eq.v))
		}
	}
	if len(f.Metadata) > 0 {
		// Containment of {"k": "v", ...}: every pair present with exactly
		// that value. The GIN jsonb_path_ops index serves it.
		conds = append(conds, "metadata @> "+b.arg(metaJSON(f.Metadata))+"::jsonb")
	}
	if !f.CreatedFrom.IsZero() {
		conds = append(conds, "created_at >= "+b.arg(f.CreatedFrom))
	}
	if !f.CreatedBefore.IsZero() {
		conds = append(conds, "created_at < "+b.arg(f.CreatedBefore))
	}
	if !f.ValidAt.IsZero() {
		p := b.arg(f.ValidAt)
		conds = append(conds, "(valid_from IS NULL OR valid_from <= "+p+") AND (valid_to IS NULL OR "+p+" < valid_to)")
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}
