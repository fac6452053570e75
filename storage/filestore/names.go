package filestore

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"strings"

	"github.com/stratamem/strata/storage"
)

const (
	dataSuffix = ".kv"
	tmpSuffix  = ".tmp"
	// maxReadableName bounds readable names well under the usual 255-byte
	// limit, leaving room for the temporary-file suffix.
	maxReadableName = 200
	numStripes      = 64
	// hashPrefix starts the name of a key too long for a readable name.
	// A readable name starts with an escaped scope, never "h-".
	hashPrefix = "h-"
)

// escapePart appends p to b with every byte outside [a-z0-9_-] as %XX.
// Keeping only lower-case letters literal makes names unique even where the
// file system folds case.
func escapePart(b *strings.Builder, p string) {
	const hexdig = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdig[c>>4])
		b.WriteByte(hexdig[c&15])
	}
}

// fileName returns the data file name of a valid key. Escaped parts never
// contain ".", so the four parts are recovered unambiguously by splitting.
func fileName(k storage.Key) string {
	var b strings.Builder
	for i, p := range [...]string{k.Scope, k.ScopeID, k.Layer, k.Name} {
		if i > 0 {
			b.WriteByte('.')
		}
		escapePart(&b, p)
	}
	name := b.String()
	if len(name)+len(dataSuffix) > maxReadableName {
		sum := sha256.Sum256([]byte(name))
		name = hashPrefix + hex.EncodeToString(sum[:])
	}
	return name + dataSuffix
}

// stripeOf maps a data file name to its lock stripe.
func stripeOf(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % numStripes)
}
