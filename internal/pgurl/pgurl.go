// Package pgurl holds what strata's PostgreSQL drivers (storage/postgres
// and vectorstore/pgvector) share for the connection URLs they hand to pgx.
package pgurl

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Query encodes q for pgx, which parses a URL query as libpq does: '+' is
// a plus, not a space, and a value holds no raw '='. url.Values.Encode
// writes spaces as '+', so "options=-c%20a%3Db" would reach the server as
// "-c+a=b". Query percent-encodes everything but the unreserved bytes
// (A-Z a-z 0-9 - . _ ~), writes the keys sorted, and only the first value
// of each key.
func Query(q url.Values) string {
	var b strings.Builder
	esc := func(s string) {
		const hex = "0123456789ABCDEF"
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~':
				b.WriteByte(c)
			default:
				b.WriteByte('%')
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			}
		}
	}
	for i, k := range slices.Sorted(maps.Keys(q)) {
		if i > 0 {
			b.WriteByte('&')
		}
		esc(k)
		b.WriteByte('=')
		esc(q.Get(k))
	}
	return b.String()
}
