package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/stratamem/strata/vectorstore"
)

// filterFlags are the record filters shared by ls, search, rm, export,
// stats and migrate.
type filterFlags struct {
	layer, kind, thread, resource string
	ids, meta                     []string
	since, until, validAt         string
	text                          string
}

func (f *filterFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVarP(&f.layer, "layer", "l", "", "only this layer (episodic, semantic, entity, observations, temporal, scratchpad, or a custom layer id)")
	fs.StringVarP(&f.kind, "kind", "k", "", "only this record kind (episode, message, entity, observation, fact, note...)")
	fs.StringVarP(&f.thread, "thread", "t", "", "only this thread (with --resource: that resource's thread of this id)")
	fs.StringVarP(&f.resource, "resource", "r", "", "only this resource (its thread-scoped records included)")
	fs.StringArrayVar(&f.ids, "id", nil, "only these ids (repeatable)")
	fs.StringArrayVar(&f.meta, "meta", nil, "only records whose metadata KEY equals VALUE: --meta KEY=VALUE (repeatable)")
	fs.StringVar(&f.since, "since", "", "created at or after: RFC 3339, YYYY-MM-DD, or an age like 90m, 24h, 7d")
	fs.StringVar(&f.until, "until", "", "created before: RFC 3339, YYYY-MM-DD, or an age like 90m, 24h, 7d")
	fs.StringVar(&f.validAt, "valid-at", "", "only records valid at this time (same forms as --since)")
	fs.StringVar(&f.text, "match", "", "only records whose text contains this (case-insensitive)")
	_ = cmd.RegisterFlagCompletionFunc("layer", completeLayers)
	_ = cmd.RegisterFlagCompletionFunc("kind", completeKinds)
}

// build returns the store filter and the text match.
func (f *filterFlags) build(now time.Time) (vectorstore.Filter, string, error) {
	flt := vectorstore.Filter{Layer: f.layer, Kind: f.kind, Thread: f.thread, Resource: f.resource}
	for _, id := range f.ids {
		if err := checkID(id); err != nil {
			return flt, "", err
		}
		flt.IDs = append(flt.IDs, id)
	}
	if len(f.meta) > 0 {
		flt.Metadata = map[string]string{}
		for _, kv := range f.meta {
			k, v, err := parseKV(kv)
			if err != nil {
				return flt, "", err
			}
			if v == "" {
				return flt, "", usageErrorf("--meta %s: a filter value must not be empty", kv)
			}
			flt.Metadata[k] = v
		}
	}
	var err error
	if flt.CreatedFrom, err = parseTimeFlag("--since", f.since, now); err != nil {
		return flt, "", err
	}
	if flt.CreatedBefore, err = parseTimeFlag("--until", f.until, now); err != nil {
		return flt, "", err
	}
	if flt.ValidAt, err = parseTimeFlag("--valid-at", f.validAt, now); err != nil {
		return flt, "", err
	}
	if !flt.CreatedFrom.IsZero() && !flt.CreatedBefore.IsZero() && !flt.CreatedBefore.After(flt.CreatedFrom) {
		return flt, "", usageErrorf("--until must be after --since")
	}
	for _, s := range []struct{ name, v string }{{"--layer", f.layer}, {"--kind", f.kind}, {"--thread", f.thread}, {"--resource", f.resource}} {
		if !utf8.ValidString(s.v) || strings.IndexByte(s.v, 0) >= 0 || len(s.v) > vectorstore.MaxFieldBytes {
			return flt, "", usageErrorf("%s: not a valid value", s.name)
		}
	}
	return flt, strings.ToLower(f.text), nil
}

// openFiltered builds the store filter and the text match of f and opens
// the configured store to read. The caller closes the store.
func (a *app) openFiltered(ctx context.Context, f *filterFlags) (*store, vectorstore.Filter, string, error) {
	flt, match, err := f.build(a.now())
	if err != nil {
		return nil, flt, "", err
	}
	s, err := a.openStore(ctx, openReadOnly, nil)
	if err != nil {
		return nil, flt, "", err
	}
	return s, flt, match, nil
}

// matchText applies the case-insensitive text match.
func matchText(r *vectorstore.Record, lowered string) bool {
	return lowered == "" || strings.Contains(strings.ToLower(r.Text), lowered)
}

// checkID rejects ids no store can hold, as a usage error.
func checkID(id string) error {
	switch {
	case id == "":
		return usageErrorf("empty id")
	case len(id) > vectorstore.MaxIDBytes:
		return usageErrorf("malformed id: longer than %d bytes", vectorstore.MaxIDBytes)
	case !utf8.ValidString(id):
		return usageErrorf("malformed id: not valid UTF-8")
	case strings.IndexByte(id, 0) >= 0 || strings.ContainsAny(id, "\n\r"):
		return usageErrorf("malformed id %q: contains a control character", id)
	}
	return nil
}

// parseKV reads KEY=VALUE.
func parseKV(kv string) (string, string, error) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return "", "", usageErrorf("--meta %q: want KEY=VALUE", kv)
	}
	if !vectorstore.ValidMetadataKey(k) {
		return "", "", usageErrorf("--meta %q: invalid key (want [A-Za-z_][A-Za-z0-9_-]{0,63})", kv)
	}
	return k, v, nil
}

// parseMeta reads --meta KEY=VALUE flags.
func parseMeta(kvs []string) (map[string]string, error) {
	md := map[string]string{}
	for _, kv := range kvs {
		k, v, err := parseKV(kv)
		if err != nil {
			return nil, err
		}
		md[k] = v
	}
	return md, nil
}

// parseTimeFlag reads a time: RFC 3339 (with or without a zone, UTC
// assumed), a date, "now", or an age (90m, 24h, 7d, 2w) before now.
func parseTimeFlag(name, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if s == "now" {
		return now.UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	if d, err := parseAge(s); err == nil {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, usageErrorf("%s %q: want RFC 3339, YYYY-MM-DD, or an age like 90m, 24h, 7d", name, s)
}

func parseAge(s string) (time.Duration, error) {
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		v, err := strconv.ParseFloat(s[:n-1], 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("bad age")
		}
		unit := 24 * time.Hour
		if s[n-1] == 'w' {
			unit *= 7
		}
		return time.Duration(v * float64(unit)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad age")
	}
	return d, nil
}

func listOpts(limit int) vectorstore.ListOptions {
	return vectorstore.ListOptions{Limit: limit}
}
