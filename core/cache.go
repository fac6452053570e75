package core

import "fmt"

// CacheConfig tunes prompt-cache anchoring. The zero value is anchoring on
// with the defaults below.
type CacheConfig struct {
	// Disabled turns anchoring off (the spec's enabled: false): every layer
	// renders before history in one band, nothing is pinned, and the view
	// asks for no cache breakpoints.
	Disabled bool
	// MaxEpochAssemblies re-anchors an epoch after this many assemblies.
	// Zero means 100.
	MaxEpochAssemblies int
	// AutoDemoteChurn moves an auto layer to the live band at an epoch
	// boundary when its churn is at or above it. Zero means 0.4.
	AutoDemoteChurn float64
	// AutoPromoteChurn moves an auto layer back to the anchor band when its
	// churn is at or below it. Zero means 0.1.
	AutoPromoteChurn float64
}

func (c CacheConfig) validate() error {
	bad := func(field, reason string) error {
		return &ConfigError{Code: CodeInvalidCacheConfig, Field: "Cache." + field, Reason: reason}
	}
	if c.MaxEpochAssemblies < 0 {
		return bad("MaxEpochAssemblies", fmt.Sprintf("negative (%d)", c.MaxEpochAssemblies))
	}
	d, p := c.demote(), c.promote()
	if !(d > 0 && d <= 1) {
		return bad("AutoDemoteChurn", fmt.Sprintf("must be in (0,1], got %v", c.AutoDemoteChurn))
	}
	if !(p >= 0 && p < d) {
		return bad("AutoPromoteChurn", fmt.Sprintf("must be in [0, AutoDemoteChurn), got %v", c.AutoPromoteChurn))
	}
	return nil
}

func (c CacheConfig) demote() float64 {
	if c.AutoDemoteChurn == 0 {
		return 0.4
	}
	return c.AutoDemoteChurn
}

func (c CacheConfig) promote() float64 {
	if c.AutoPromoteChurn == 0 {
		return 0.1
	}
	return c.AutoPromoteChurn
}

func (c CacheConfig) maxAssemblies() int {
	if c.MaxEpochAssemblies == 0 {
		return 100
	}
	return c.MaxEpochAssemblies
}
