//go:build !linux

package chromem

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
