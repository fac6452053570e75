// Package procinfo reads what the benchmark reports say about the machine
// they ran on, from Linux's /proc. Elsewhere every value is "".
package procinfo

import (
	"bufio"
	"os"
	"strings"
)

// Field returns the value of the first "key: value" line of a /proc file,
// "" when the file or the key is missing.
func Field(path, key string) string {
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

// Load is /proc/loadavg's 1, 5 and 15 minute averages, "" when unknown.
func Load() string {
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
