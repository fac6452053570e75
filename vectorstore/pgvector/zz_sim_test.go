package pgvector

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/stratamem/strata/vectorstore/driver"
)

func TestDebugSim(t *testing.T) {
	if os.Getenv("DEBUG_SIM") == "" {
		t.Skip()
	}
	if v := os.Getenv("ZIPF_V"); v != "" {
		fmt.Sscan(v, &benchZipfV)
	}
	all := benchRecords(true)
	var docs []driver.Record
	for _, r := range all {
		if r.Scope.Resource == "u1" {
			r.Vector = nil
			docs = append(docs, r)
		}
	}
	N := len(docs)
	dls := make([]float64, N)
	var total float64
	post := map[string][]int{}
	for i := range docs {
		dls[i] = docs[i].Terms.Len()
		total += dls[i]
		for t := range docs[i].Terms {
			post[t] = append(post[t], i)
		}
	}
	avg := total / float64(N)
	k1, b, K := 1.2, 0.75, 50
	sat := func(tf, dl float64) float64 { return tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avg)) }
	r := rand.New(rand.NewPCG(31, 32))
	z := benchZipf(r)
	var stats [][]int
	var stats0 []int
	for qi := 0; qi < 60; qi++ {
		q := map[string]float64{}
		for len(q) < 5 {
			q[benchWord(z.Uint64())] = 1
		}
		type qt struct {
			t      string
			wi, ub float64
			df     int
		}
		var qs []qt
		maxtfs := map[string]float64{}
		for t := range q {
			df := len(post[t])
			if df == 0 {
				continue
			}
			wi := driver.IDF(N, df)
			maxtf, mindl := 0.0, 1e18
			for _, d := range post[t] {
				maxtf = max(maxtf, float64(docs[d].Terms[t]))
				mindl = min(mindl, dls[d])
			}
			qs = append(qs, qt{t, wi, wi * sat(maxtf, mindl), df})
			maxtfs[t] = maxtf
		}
		sort.Slice(qs, func(i, j int) bool { return qs[i].ub > qs[j].ub })
		score := func(d int) float64 {
			s := 0.0
			for _, x := range qs {
				if tf := float64(docs[d].Terms[x.t]); tf > 0 {
					s += x.wi * sat(tf, dls[d])
				}
			}
			return s
		}
		part := func(d int, upto int) float64 {
			s := 0.0
			for _, x := range qs[:upto] {
				if tf := float64(docs[d].Terms[x.t]); tf > 0 {
					s += x.wi * sat(tf, dls[d])
				}
			}
			return s
		}
		// true theta
		var full []float64
		seen := map[int]bool{}
		for _, x := range qs {
			for _, d := range post[x.t] {
				if !seen[d] {
					seen[d] = true
					full = append(full, score(d))
				}
			}
		}
		slices.Sort(full)
		slices.Reverse(full)
		thTrue := full[min(K, len(full))-1]
		// seed
		seed, cum := 0, 0
		for seed < len(qs) && cum < K {
			cum += qs[seed].df
			seed++
		}
		var seedDocs []int
		seenS := map[int]bool{}
		for _, x := range qs[:seed] {
			for _, d := range post[x.t] {
				if !seenS[d] {
					seenS[d] = true
					seedDocs = append(seedDocs, d)
				}
			}
		}
		var parts []float64
		for _, d := range seedDocs {
			parts = append(parts, part(d, seed))
		}
		slices.Sort(parts)
		slices.Reverse(parts)
		th0 := 0.0
		if len(parts) >= K {
			th0 = parts[K-1]
		}
		// th1: exact scores of all seed docs
		var ex []float64
		for _, d := range seedDocs {
			ex = append(ex, score(d))
		}
		slices.Sort(ex)
		slices.Reverse(ex)
		th1 := 0.0
		if len(ex) >= K {
			th1 = ex[K-1]
		}
		count := func(th float64) (ess, scanned, cand, surv int) {
			sfx := make([]float64, len(qs)+1)
			for i := len(qs) - 1; i >= 0; i-- {
				sfx[i] = sfx[i+1] + qs[i].ub
			}
			for ess < len(qs) && sfx[ess] >= th {
				ess++
			}
			rest := sfx[ess]
			c := map[int]bool{}
			for _, x := range qs[:ess] {
				scanned += x.df
				for _, d := range post[x.t] {
					c[d] = true
				}
			}
			cand = len(c)
			_ = rest
			for d := range c {
				ub := part(d, ess)
				for _, x := range qs[ess:] {
					ub += x.wi * sat(maxtfs[x.t], dls[d])
				}
				if ub >= th {
					surv++
				}
			}
			return
		}
		// lazy: essential set from th1, candidates by per-doc UB desc, exact
		// scoring until the K-th exact >= next UB.
		lazy := func(th float64) (scanned, evaluated int) {
			sfx := make([]float64, len(qs)+1)
			for i := len(qs) - 1; i >= 0; i-- {
				sfx[i] = sfx[i+1] + qs[i].ub
			}
			ess := 0
			for ess < len(qs) && sfx[ess] >= th {
				ess++
			}
			c := map[int]bool{}
			for _, x := range qs[:ess] {
				scanned += x.df
				for _, d := range post[x.t] {
					c[d] = true
				}
			}
			type cu struct {
				d  int
				ub float64
			}
			var cs []cu
			for d := range c {
				ub := part(d, ess)
				for _, x := range qs[ess:] {
					// per-doc bound: maxtf of the term, this doc's length
					maxtf := 0.0
					_ = maxtf
					ub += x.ub // global bound
				}
				cs = append(cs, cu{d, ub})
			}
			sort.Slice(cs, func(i, j int) bool { return cs[i].ub > cs[j].ub })
			var top []float64
			for _, x := range cs {
				if len(top) >= K && top[K-1] >= x.ub {
					break
				}
				evaluated++
				top = append(top, score(x.d))
				sort.Sort(sort.Reverse(sort.Float64Slice(top)))
				if len(top) > K {
					top = top[:K]
				}
			}
			return
		}
		ls, le := lazy(th1)
		fmt.Printf("   lazy(th1): scanned %d evaluated %d\n", ls, le)
		stats0 = append(stats0, le)
		e0, s0, c0, v0 := count(th0)
		e1, s1, c1, v1 := count(th1)
		et, st, ct, vt := count(thTrue)
		dfs := []int{}
		for _, x := range qs {
			dfs = append(dfs, x.df)
		}
		fmt.Printf("q%02d dfs %v seedpost %d | th0 %.2f ess %d scan %d cand %d surv %d | th1 %.2f ess %d scan %d cand %d surv %d | true %.2f ess %d scan %d cand %d surv %d\n",
			qi, dfs, cum, th0, e0, s0, c0, v0, th1, e1, s1, c1, v1, thTrue, et, st, ct, vt)
		stats = append(stats, []int{cum, s0, v0, s1, v1, st, vt})
	}
	slices.Sort(stats0)
	fmt.Println("lazy evaluated p50", stats0[len(stats0)/2], "p90", stats0[len(stats0)*9/10])
	var dfs []int
	for _, p := range post {
		dfs = append(dfs, len(p))
	}
	slices.Sort(dfs)
	fmt.Println("top dfs", dfs[len(dfs)-5:], "terms", len(dfs))
	for col, name := range []string{"seedpost", "scan0", "surv0", "scan1", "surv1", "scanT", "survT"} {
		var v []int
		for _, s := range stats {
			v = append(v, s[col])
		}
		slices.Sort(v)
		fmt.Printf("%s p50 %d p90 %d\n", name, v[len(v)/2], v[len(v)*9/10])
	}
}
