package chromem

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/stratamem/strata/vectorstore/driver"
)

// The indexed record fields. Each names the records holding one value, so a
// filter that sets any of them needs to look at those records only.
const (
	fieldLayer = iota
	fieldThread
	fieldResource
	numFields
)

// fieldOf returns the value of indexed field fi of r.
func fieldOf(r *driver.Record, fi int) string {
	switch fi {
	case fieldLayer:
		return r.Layer
	case fieldThread:
		return r.Scope.Thread
	default:
		return r.Scope.Resource
	}
}

// filterField returns the value filter f requires of indexed field fi, ""
// when it does not constrain it.
func filterField(f *driver.Filter, fi int) string {
	switch fi {
	case fieldLayer:
		return f.Layer
	case fieldThread:
		return f.Thread
	default:
		return f.Resource
	}
}

// scopeIndex is the in-memory index of a collection by layer, thread and
// resource: for each field, the non-empty values in use, each mapped to the
// records holding it, sorted in List order (CreatedAt, ID). An empty value
// is not indexed: a filter cannot ask for it ("" means any). The records are
// the collection's own immutable *driver.Record, so an entry costs one
// pointer (8 bytes) per indexed non-empty field, and a value in use one map
// entry and one slice header.
//
// The index is guarded by the collection's mu, like recs: readers hold it
// shared, update holds it exclusively. A nil map (before build, after
// Close) is an index of nothing that update leaves alone.
type scopeIndex struct {
	by [numFields]map[string][]*driver.Record
}

// built reports whether the index is maintained; during the replay at open
// it is not, and build makes it once from the replayed records.
func (x *scopeIndex) built() bool { return x.by[0] != nil }

// build indexes recs from scratch in O(n log n): counted first, so that
// every list is allocated at its exact size.
func (x *scopeIndex) build(recs map[string]*driver.Record) {
	for fi := range x.by {
		sizes := make(map[string]int)
		for _, r := range recs {
			if v := fieldOf(r, fi); v != "" {
				sizes[v]++
			}
		}
		m := make(map[string][]*driver.Record, len(sizes))
		for v, n := range sizes {
			m[v] = make([]*driver.Record, 0, n)
		}
		for _, r := range recs {
			if v := fieldOf(r, fi); v != "" {
				m[v] = append(m[v], r)
			}
		}
		for _, l := range m {
			slices.SortFunc(l, driver.CompareRecords)
		}
		x.by[fi] = m
	}
}

// candidates returns the smallest index list among the fields f sets (a
// superset of the records f matches, in List order), its field and true,
// or false when f sets none of them (the caller then scans everything). A
// value nobody holds yields an empty list: nothing can match.
func (x *scopeIndex) candidates(f *driver.Filter) ([]*driver.Record, int, bool) {
	var best []*driver.Record
	bestField, ok := -1, false
	for fi := range x.by {
		v := filterField(f, fi)
		if v == "" {
			continue
		}
		l := x.by[fi][v]
		if !ok || len(l) < len(best) {
			best, bestField, ok = l, fi, true
		}
	}
	return best, bestField, ok
}

// onlyField reports whether f constrains nothing but indexed field fi, so
// that the records of fi's list are exactly the matches.
func onlyField(f *driver.Filter, fi int) bool {
	g := *f
	switch fi {
	case fieldLayer:
		g.Layer = ""
	case fieldThread:
		g.Thread = ""
	default:
		g.Resource = ""
	}
	return g.IsZero()
}

// change is one entry of an index update: r leaves (add false) or joins
// (add true) the list of value key.
type change struct {
	key string
	add bool
	r   *driver.Record
}

// pointOps is the largest number of changes to one list applied one by one
// (binary search, then an insert or removal that moves the list's tail);
// more are applied in one linear merge pass.
const pointOps = 8

// update removes the records rm from the index and adds the records add.
// Every record of rm is indexed (a record the caller replaced or deleted),
// every record of add is not, and no record is in both: a batch that writes
// one id twice passes only its last record, and rm holds what was stored
// before the batch. The caller holds mu exclusively.
//
// Cost per touched list of n entries receiving m changes: O(m (log n + n))
// moves for m <= pointOps, but appends of records newer than the whole
// list (the usual write: CreatedAt now) only move themselves; O(n + m log m)
// above.
func (x *scopeIndex) update(rm, add []*driver.Record) {
	if !x.built() || len(rm)+len(add) == 0 {
		return
	}
	chs := make([]change, 0, len(rm)+len(add))
	for fi := range x.by {
		chs = chs[:0]
		for _, r := range rm {
			if v := fieldOf(r, fi); v != "" {
				chs = append(chs, change{v, false, r})
			}
		}
		for _, r := range add {
			if v := fieldOf(r, fi); v != "" {
				chs = append(chs, change{v, true, r})
			}
		}
		if len(chs) > 1 {
			// By list, removals first, each part in list order.
			slices.SortFunc(chs, func(a, b change) int {
				if c := strings.Compare(a.key, b.key); c != 0 {
					return c
				}
				if a.add != b.add {
					if a.add {
						return 1
					}
					return -1
				}
				return driver.CompareRecords(a.r, b.r)
			})
		}
		m := x.by[fi]
		for i := 0; i < len(chs); {
			j := i + 1
			for j < len(chs) && chs[j].key == chs[i].key {
				j++
			}
			key := chs[i].key
			l := apply(m[key], chs[i:j])
			if len(l) == 0 {
				delete(m, key)
			} else {
				m[key] = l
			}
			i = j
		}
	}
}

// apply applies chs (all for one list, removals first, each part in list
// order) to list l and returns the new list.
func apply(l []*driver.Record, chs []change) []*driver.Record {
	nrm := 0
	for nrm < len(chs) && !chs[nrm].add {
		nrm++
	}
	rms, adds := chs[:nrm], chs[nrm:]
	n0 := len(l)
	if len(chs) <= pointOps {
		for _, c := range rms {
			if i, ok := search(l, c.r); ok && l[i] == c.r {
				l = append(l[:i], l[i+1:]...)
			}
		}
		for _, c := range adds {
			if len(l) == 0 || driver.CompareRecords(l[len(l)-1], c.r) < 0 {
				l = append(l, c.r) // the usual case: newer than all
				continue
			}
			i, _ := search(l, c.r)
			l = slices.Insert(l, i, c.r)
		}
	} else {
		// Removals: one pass keeping what rms (in list order) does not name.
		if len(rms) > 0 {
			k, j := 0, 0
			for _, r := range l {
				for j < len(rms) && driver.CompareRecords(rms[j].r, r) < 0 {
					j++ // not in the list; cannot happen
				}
				if j < len(rms) && rms[j].r == r {
					j++
					continue
				}
				l[k] = r
				k++
			}
			l = l[:k]
		}
		// Additions: grow, then merge from the back in place.
		if len(adds) > 0 {
			n := len(l)
			l = slices.Grow(l, len(adds))[:n+len(adds)]
			i, j := n-1, len(adds)-1
			for k := len(l) - 1; j >= 0; k-- {
				if i >= 0 && driver.CompareRecords(l[i], adds[j].r) > 0 {
					l[k] = l[i]
					i--
				} else {
					l[k] = adds[j].r
					j--
				}
			}
		}
	}
	if len(l) < n0 {
		clear(l[len(l):n0]) // drop the removed records' pointers
		if cap(l) > 64 && len(l) < cap(l)/4 {
			l = slices.Clip(slices.Clone(l)) // give back the memory of a shrunk list
		}
	}
	return l
}

// search finds r's position in list l (sorted by CompareRecords): the index
// of an entry comparing equal, or where r would be inserted.
func search(l []*driver.Record, r *driver.Record) (int, bool) {
	return slices.BinarySearchFunc(l, r, driver.CompareRecords)
}

// page returns up to q.Limit records of list l (in List order) that match
// q.Filter and lie after q.After in the requested order: a binary search for
// the cursor, then a walk that stops at the limit. O(log n + s), s the
// entries walked: at most the list's length, and q.Limit when every entry
// matches the rest of the filter.
func page(l []*driver.Record, q *driver.ListQuery) []*driver.Record {
	// The first entry after the cursor in ascending order, and the last
	// one before it.
	lo, hi := 0, len(l)
	if c := q.After; c != nil {
		at := func(i int) int {
			r := l[i]
			return cmp.Or(r.CreatedAt.Compare(c.CreatedAt), strings.Compare(r.ID, c.ID))
		}
		if q.Desc {
			hi = sort.Search(len(l), func(i int) bool { return at(i) >= 0 })
		} else {
			lo = sort.Search(len(l), func(i int) bool { return at(i) > 0 })
		}
	}
	var res []*driver.Record
	take := func(r *driver.Record) bool {
		if q.Filter.Matches(r) {
			res = append(res, r)
		}
		return len(res) < q.Limit
	}
	if q.Desc {
		for i := hi - 1; i >= lo && take(l[i]); i-- {
		}
	} else {
		for i := lo; i < hi && take(l[i]); i++ {
		}
	}
	return res
}
