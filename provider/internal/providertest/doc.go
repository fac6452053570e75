// Package providertest holds the test helpers the provider adapters
// share: representative views assembled by a real core runtime, golden
// request bodies compared byte for byte (go test -update rewrites them),
// JSON schema checks, and the plumbing of the fake provider servers —
// request recording and the simulated clock their cache models run on.
// What speaks a provider's wire format stays in that adapter's tests.
//
// It is imported by tests only; being internal, no user can depend on it.
package providertest
