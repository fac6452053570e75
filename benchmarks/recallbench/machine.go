package recallbench

import (
	"bufio"
	"os"
	"runtime"
	"strings"
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
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	m.MemTotal = procField("/proc/meminfo", "MemTotal")
	m.LoadStart = readLoad()
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file, "" when the file or the key is missing (not Linux).
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
