#!/usr/bin/env bash
# make test: install what the tests need (the embedding model, the
# PostgreSQL+pgvector engine), start the engine, run every test under the
# race detector, and stop the engine whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== vet and format"
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

if [ -f scripts/model.sh ]; then
  echo "== default embedding model"
  bash scripts/model.sh
  export STRATA_REQUIRE_MODEL=1
fi

if [ -f scripts/pg.sh ]; then
  echo "== PostgreSQL + pgvector"
  trap 'bash scripts/pg.sh down || true' EXIT
  bash scripts/pg.sh up
  eval "$(bash scripts/pg.sh env)"
  export STRATA_REQUIRE_PG=1
fi

echo "== go test -race ./..."
go test -race -count=1 -timeout 30m ./...
