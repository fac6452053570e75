# strata — the two set-up commands of the README are `make demo` and
# `make test`; the other targets are what they are made of.
SHELL := /bin/bash
GO    ?= go

.PHONY: demo test model pg-up pg-down unit bench bench-cache bench-recall bench-quality bench-scale vet fmt

## demo: build the example agent (saying so: the first build downloads modules
## and compiles for minutes), then run it offline on the embedded
## default. DEMO_FLAGS=-views prints every view, DEMO_FLAGS=-quiet the
## summary alone.
DEMO_FLAGS ?=
demo: model
	@echo "== building examples/agent (the first build downloads modules and compiles about 400 packages, the standard library included: one to several minutes; later ones take seconds)"
	@set -o pipefail; tty=0; [ -t 1 ] && tty=1; $(GO) build -v -o .strata/bin/agent ./examples/agent 2>&1 | \
		awk -v tty=$$tty '/^go: downloading/ { d++; if (!tty) print; next } \
			{ n++; if (tty) { printf "\r   compiling (%d): %-60.60s", n, $$0; fflush() } else if (n % 50 == 0) print "   compiled " n " packages" } \
			END { if (n) printf "%s   compiled %d packages%s.\n", (tty ? "\r" : ""), n, (d ? ", downloaded " d " modules" : "") }'
	@echo "== running it: .strata/bin/agent -offline $(DEMO_FLAGS)"
	@.strata/bin/agent -offline $(DEMO_FLAGS)

## test: install and start what the tests need, run them under -race, stop
test:
	bash scripts/test.sh

## model: install the default offline embedding model into .strata/models
model:
	bash scripts/model.sh

## pg-up / pg-down: the PostgreSQL 17 + pgvector engine used by the tests
pg-up:
	bash scripts/pg.sh up
pg-down:
	bash scripts/pg.sh down

## unit: the tests that need no engine or model (they skip the rest)
unit:
	$(GO) test -race ./...

## bench: micro-benchmarks of assembly, tokens and stores
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./projector/ ./core/ ./tokens/...

## bench-cache: the cache-stability benchmark (benchmarks/results/cache-stability.*)
bench-cache:
	$(GO) run ./benchmarks/cmd/cachebench -out benchmarks/results

## bench-recall: vector backends' recall, latency and ingest (needs root for the engine)
bench-recall: model
	bash scripts/pg.sh with $(GO) run ./benchmarks/cmd/recallbench -out benchmarks/results

## bench-quality: retrieval quality of semantic recall and the temporal ledger
bench-quality: model
	$(GO) run ./benchmarks/cmd/recallquality -out benchmarks/results/recall-quality.md

## bench-scale: semantic memory cost with history size, embedded and pgvector
## (benchmarks/results/scale.*; needs root for the engine; see benchmarks/README.md)
bench-scale: model
	STRATA_PG_SHARED_BUFFERS=2GB STRATA_PG_EFFECTIVE_CACHE_SIZE=8GB bash scripts/pg.sh with $(GO) run ./benchmarks/cmd/scalebench -out benchmarks/results

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

fmt:
	gofmt -w $$(git ls-files '*.go')
