package scalebench

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Mem is the process's memory at one moment, after a full GC.
type Mem struct {
	// RSSMiB is VmRSS of /proc/self/status (0 where there is no /proc).
	RSSMiB float64 `json:"rss_mib"`
	// PeakMiB is VmHWM, the peak RSS so far.
	PeakMiB float64 `json:"peak_mib"`
	// HeapMiB is the Go heap in use (runtime.MemStats.HeapAlloc).
	HeapMiB float64 `json:"heap_mib"`
}

// readMem collects garbage, returns freed pages to the OS and reads the
// process's memory.
func readMem() Mem {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := Mem{HeapMiB: float64(ms.HeapAlloc) / (1 << 20)}
	m.RSSMiB = statusKiB("VmRSS") / 1024
	m.PeakMiB = statusKiB("VmHWM") / 1024
	return m
}

func statusKiB(key string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == key {
			fs := strings.Fields(v)
			if len(fs) > 0 {
				n, _ := strconv.ParseFloat(fs[0], 64)
				return n
			}
		}
	}
	return 0
}

// cpuTicks is the process's user+system CPU time in clock ticks (1/100 s
// on Linux); -1 without /proc.
func cpuTicks() int64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	// The command name may hold spaces: fields start after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	// utime and stime are fields 14 and 15 of stat, 12 and 13 here.
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// waitIdle waits until the process uses less than a fifth of one CPU over
// a quarter second, or max has passed, and returns how long it waited. A
// hook the runtime stopped waiting for (an init past its timeout) goes on
// running on its goroutine; the next measurement should not share the
// CPU with it.
func waitIdle(max time.Duration) time.Duration {
	start := time.Now()
	prev := cpuTicks()
	if prev < 0 {
		return 0
	}
	for time.Since(start) < max {
		time.Sleep(250 * time.Millisecond)
		cur := cpuTicks()
		if cur-prev <= 5 {
			return time.Since(start)
		}
		prev = cur
	}
	return time.Since(start)
}

// Dist summarises latency samples, in milliseconds.
type Dist struct {
	N    int     `json:"n"`
	Fail int     `json:"failures,omitempty"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

func dist(samples []time.Duration, fail int) Dist {
	d := Dist{N: len(samples) + fail, Fail: fail}
	if len(samples) == 0 {
		return d
	}
	ms := make([]float64, len(samples))
	var sum float64
	for i, s := range samples {
		ms[i] = float64(s) / 1e6
		sum += ms[i]
	}
	sort.Float64s(ms)
	d.P50, d.P95, d.Max, d.Mean = quantile(ms, 0.5), quantile(ms, 0.95), ms[len(ms)-1], sum/float64(len(ms))
	return d
}

// quantile of sorted xs, linearly interpolated.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 1 {
		return xs[0]
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}
