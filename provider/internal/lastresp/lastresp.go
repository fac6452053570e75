// Package lastresp remembers the id of each thread's latest response, the
// baseline both adapters hand back to their provider when they ask for
// prompt-cache diagnostics (Anthropic's diagnostics.previous_message_id,
// OpenAI's prompt_cache_options.comparison_response_id).
package lastresp

import "sync"

// DefaultMaxThreads is how many threads a zero Table keeps.
const DefaultMaxThreads = 4096

// Table maps thread ids to their latest response id. The zero value is
// ready to use and keeps DefaultMaxThreads threads; it is safe for
// concurrent use.
//
// Past its size an arbitrary thread is forgotten: its next request is
// compared with nothing and loses one diagnosis, nothing else, so a
// long-running process does not grow with every thread it has served.
type Table struct {
	// Max bounds the threads kept; zero means DefaultMaxThreads.
	Max int

	mu  sync.Mutex
	ids map[string]string
}

// Get returns thread's latest response id, if one was recorded.
func (t *Table) Get(thread string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id, ok := t.ids[thread]
	return id, ok
}

// Set records id as thread's latest response. Empty thread or id records
// nothing: there is nothing to compare within or with.
func (t *Table) Set(thread, id string) {
	if thread == "" || id == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[string]string{}
	}
	limit := t.Max
	if limit <= 0 {
		limit = DefaultMaxThreads
	}
	if _, ok := t.ids[thread]; !ok && len(t.ids) >= limit {
		for k := range t.ids {
			delete(t.ids, k)
			break
		}
	}
	t.ids[thread] = id
}

// Len is the number of threads kept.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ids)
}
