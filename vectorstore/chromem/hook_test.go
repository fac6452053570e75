package chromem

import (
	"github.com/stratamem/strata/vectorstore"
	"github.com/stratamem/strata/vectorstore/internal/hook"
)

// driverOf returns the driver collection under c, which this driver opened.
func driverOf(c *vectorstore.Collection) *collection { return hook.DriverOf(c).(*collection) }
