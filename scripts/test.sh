#!/usr/bin/env bash
# make test: install what the tests need (the default embedding model, the
# PostgreSQL 17 + pgvector engine), start the engine, run every test under
# the race detector, and stop the engine whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet and gofmt"
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== default embedding model (scripts/model.sh)"
bash scripts/model.sh
# Tests that need the model or the engine fail instead of skipping.
export STRATA_REQUIRE_MODEL=1 STRATA_REQUIRE_PG=1

echo "== PostgreSQL + pgvector (scripts/pg.sh), then go test -race ./..."
# `pg.sh with` starts the server, exports STRATA_TEST_PG_DSN, runs the
# command and stops the server whatever the command does.
bash scripts/pg.sh with go test -race -count=1 -timeout 40m ./...
