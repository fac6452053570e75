package recallbench

import (
	"github.com/stratamem/strata/internal/procinfo"
	"runtime"
)

// Machine describes where a run happened.
type Machine struct {
	CPUs      int    // runtime.NumCPU
	CPUModel  string // "model name" of /proc/cpuinfo ("" when unknown)
	MemTotal  string // "MemTotal" of /proc/meminfo
	GoVersion string
	OSArch    string
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load
	// averages when the run started and ended: on a shared machine they
	// say how much of it the benchmark had.
	LoadStart, LoadEnd string
}

func readMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH}
	m.CPUModel = procinfo.Field("/proc/cpuinfo", "model name")
	m.MemTotal = procinfo.Field("/proc/meminfo", "MemTotal")
	m.LoadStart = readLoad()
	return m
}

func readLoad() string { return procinfo.Load() }
