// Package filestore is the embedded, durable storage.Store: one file per
// key under one directory, with no server and no dependencies beyond the
// operating system.
//
// # Layout
//
//	dir/FORMAT              "strata-filestore 1"; refuses unknown formats
//	dir/data/<name>.kv      one file per key
//	dir/locks/<n>.lock      stripe lock files for cross-process writers
//
// A key's file name is built from its four parts, each escaped so that only
// [a-z0-9_-] stay literal and every other byte becomes %XX (upper-case hex),
// then joined with ".". No name can contain a path separator or be "." or
// "..", no two keys share a name, and names stay distinct on
// case-insensitive file systems. Names longer than 200 bytes are replaced by
// "h-" plus the SHA-256 of the escaped form; the full key is stored inside
// every file and checked on read, so a misplaced file is reported, not
// served.
//
// # Listing a scope
//
// Store implements storage.Lister. Keys reads the data directory and opens
// the files whose readable name starts with the escaped scope and scope id,
// plus every hashed file, since a hashed name hides its key; of each it
// reads only the header and the key. Every key is thus recoverable,
// tombstones and temporary files are skipped, and a listing costs one
// directory read plus one small read per candidate file: cheap for a
// maintenance tool, not meant for a hot path.
//
// Store implements storage.ScopeLister the same way: escaping works byte by
// byte, so the scope ids that start with a prefix are those whose readable
// names start with the escaped scope and prefix; ScopeIDs opens those files
// and the hashed ones, and collects the scope ids of the live keys.
//
// # File format
//
// A file is a 24-byte header — magic "SFS1", a flags byte (bit 0: deleted),
// three zero bytes, the revision (int64), the key length and the value
// length (uint32 each), all big-endian — followed by the encoded key, the
// value and a CRC-32C of everything before it. A file that does not parse
// or whose checksum does not match yields a *CorruptError naming the file.
//
// # Writes and durability
//
// Put and Delete write a temporary file in the data directory, fsync it,
// rename it over the key's file and fsync the directory before returning,
// so an acknowledged write survives a process crash or power loss (with
// Options.NoSync only the former). Readers never lock: rename is atomic, so
// Get sees the old or the new file, never a mix.
//
// The read-compare-write section of a write holds two locks for the key's
// stripe (one of 64, by hash of the file name): an in-process semaphore and
// an exclusive flock on the stripe's lock file, so writers in other
// goroutines and in other processes that open the same directory are
// serialized per stripe while different stripes proceed in parallel.
//
// Delete leaves a small tombstone file that remembers the key's revision, so
// re-creating the key continues from a higher revision and a writer holding
// a revision from before the delete can never succeed. Temporary files left
// by a crashed writer are ignored by readers and removed by Open.
package filestore
