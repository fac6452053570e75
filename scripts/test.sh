#!/usr/bin/env bash
# make test: install what the tests need (the default embedding model, the
# PostgreSQL 17 + pgvector engine, rsvg-convert for the plot checks), start
# the engine, run every test under the race detector, then the retrieval
# quality corpora once without it, and stop the engine whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet and gofmt"
# -race: vet compiles the packages the way the race-enabled test run
# below builds them, so that run reuses them instead of compiling
# everything a second time (on a fresh machine, minutes).
go vet -race ./...
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== default embedding model (scripts/model.sh)"
bash scripts/model.sh

# The benchmark tests render their SVG plots to PNG with rsvg-convert
# (Debian librsvg2-bin) to check that every series is drawn.
if ! command -v rsvg-convert >/dev/null 2>&1; then
  echo "== rsvg-convert (apt-get install librsvg2-bin)"
  as_root=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "test.sh: rsvg-convert is missing and installing librsvg2-bin needs root or sudo" >&2; exit 1; }
    as_root=(sudo)
  fi
  "${as_root[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends librsvg2-bin
fi

# Tests that need the model, the engine or rsvg-convert fail instead of
# skipping.
export STRATA_REQUIRE_MODEL=1 STRATA_REQUIRE_PG=1 STRATA_REQUIRE_RSVG=1

# The retrieval-quality corpora (benchmarks/internal/recallquality,
# TestQuality*) skip under the race detector: recording them is minutes of
# model arithmetic that -race slows several times and that holds no
# concurrency of its own. The package's other tests still run under -race
# in the main run; the corpora run once, without it, afterwards.
quality=./benchmarks/internal/recallquality/

echo "== PostgreSQL + pgvector (scripts/pg.sh), then go test -race ./..."
# `pg.sh with` starts the server, exports STRATA_TEST_PG_DSN, runs the
# command and stops the server whatever the command does.
bash scripts/pg.sh with go test -race -count=1 -timeout 40m ./...

echo "== retrieval-quality corpora and the model's golden check, without -race"
go test -count=1 -timeout 20m -run '^TestQuality' "$quality"
# The embedding model's golden check over both kernel sets: arithmetic
# only, skipped under -race above for the same reason.
go test -count=1 -run '^TestGoldenBothKernels$' ./embed/uselite/
