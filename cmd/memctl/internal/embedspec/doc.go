// Package embedspec turns memctl's --embedder values and the model ids
// recorded in a store into embed.Embedders, and provides Lazy, an embedder
// that declares its model id and dimension without loading the model until
// something is embedded.
package embedspec
