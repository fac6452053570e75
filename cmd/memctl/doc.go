// Command memctl manages the memories strata's layers store: list, show,
// search, add, edit, delete, export, import, re-embed, migrate between
// backends with the runtime's layer state, list and edit that state, and
// inspect what an agent saw on a thread's last turn.
//
//	memctl ls --layer observations --thread t1
//	memctl show ID
//	memctl search "where does the user live" --resource alice
//	memctl add -l scratchpad -t t1 --key plan "ship v2 on Friday"
//	memctl edit ID --meta importance=5
//	memctl rm --resource alice --yes          # the right to be forgotten
//	memctl rm --thread main --legacy --yes    # what main kept before tenancy
//	memctl export > memories.jsonl            # lossless: vectors, layer state, assemblies
//	memctl --store postgres://... import memories.jsonl
//	memctl stats
//	memctl reindex hash:256                   # resumable, any dimension
//	memctl migrate --to 'qdrant://localhost:6334?collection=memories'
//	memctl migrate --to 'postgres://app@db/strata' --batch 10000 --timeout 20m
//	memctl inspect t1 --resource alice
//	memctl inspect t1 --list                  # per turn: tokens, epoch, cache miss, cost
//	memctl inspect t1 --turn 9 --items log:42 # a cleared tool output, in full
//	memctl state ls -r alice                  # layer state, bindings, recorded assemblies
//	memctl state edit todo -t t1 -r alice     # $EDITOR, compare-and-swap
//	memctl bench
//	memctl salvage --dry-run                  # a damaged embedded log (CORRUPT)
//	memctl completion bash > /etc/bash_completion.d/memctl
//	memctl version
//
// Human-readable output escapes the control characters memories hold
// (\x1b, \u009b, bidirectional overrides...), so a memory planted by a
// prompt-injected model cannot drive the operator's terminal; --json and
// export write the text exactly. A thread that belongs to a resource is
// named by both (memctl ls -t main -r alice, memctl inspect main -r
// alice); memctl rm --resource erases the resource's threads under their
// tenancy keys and reports the legacy data (written before threads were
// keyed by resource) it cannot attribute to the resource. An embedded store
// whose log is damaged fails with CORRUPT (exit 1); memctl salvage keeps
// its intact records, after asking, and sets the damaged log aside.
//
// While an agent has an embedded store open, the read commands (ls, show,
// search, stats, export, migrate's source) read a snapshot of its records
// and the state store in place; the writing commands fail naming the
// process that holds the store (pid and command line). Tables fit 80
// columns (a wider terminal's width when the output is one) unless
// --wide (-w).
//
// migrate writes --batch records at a time: 10,000 into postgres by
// default, whose driver loads a batch of its copy_threshold (1,000) or
// more with COPY, and 500 into the others. Into a postgres collection that
// is new or empty, or whose HNSW index an interrupted migrate left out, it
// loads with defer_index=true (the indexes are dropped at the first batch
// and built once when the target is closed, after the last); a failed
// build fails the migrate, and running it again builds them. A --timeout
// given on the command line becomes the driver's bulk_timeout, the bound
// of each batch and of that build (else 10 minutes); defer_index and
// bulk_timeout in the target URL win.
//
// With --server URL (the API key in $STRATA_API_KEY), memctl runs ls,
// show, search, add, edit, rm, stats, export, state and inspect through a
// strata server (strata serve) that holds the store, within the resources
// the key is bound to: the server embeds what add and edit write; edit
// writes back at the revision it read, so a write made meanwhile wins and
// the edit exits 1 with nothing written; export writes one resource's
// records and layer state. import, migrate, reindex, salvage and bench
// need the store's files or engine and refuse --server, saying why.
//
// inspect shows, with each turn, what the host reported of its model call
// (core.Session.ReportCache): the cache miss the runtime attributed (cause,
// band, layer, the provider's reason, the tokens missed) and the input's
// cost by band, recorded with the thread's next turn.
//
// The store is --store, else $STRATA_STORE, else the config file
// ($XDG_CONFIG_HOME/strata/memctl.json), else ./.strata/data (the embedded
// default). Exit status: 0 ok, 1 runtime error, 2 usage error, 3 not
// found. See memctl --help and each command's --help.
package main
