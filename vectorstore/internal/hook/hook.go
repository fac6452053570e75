// Package hook gives the packages under vectorstore/ (the fault injector,
// the conformance suite, the drivers' own tests) the driver under a
// *vectorstore.Collection, which the portable API does not hand out (see
// Collection.As for what it does).
package hook

import "github.com/stratamem/strata/vectorstore/driver"

// DriverOf returns the driver collection under c, a *vectorstore.Collection.
// Package vectorstore sets it when it is initialised, so it is set for any
// caller that holds a *vectorstore.Collection.
var DriverOf func(c any) driver.Collection
