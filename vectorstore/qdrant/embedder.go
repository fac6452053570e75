package qdrant

import (
	"context"
	"fmt"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/stratamem/strata/vectorstore/internal/driverutil"
)

// Collection metadata keys (Qdrant 1.16 and later keep a JSON-like map
// with each collection, merged on update) that record which embedder wrote
// the collection: its model id (embed.Embedder.Model) and dimension.
const (
	MetaEmbedder          = "strata_embedder"
	MetaEmbedderDimension = "strata_embedder_dimension"
)

// EmbedderRecord returns the embedder recorded in the collection's
// metadata, or "" and 0 when none is (a collection written by older code,
// or a server older than 1.16, which has no collection metadata).
func (c *collection) EmbedderRecord(ctx context.Context) (string, int, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	info, err := c.cl.GetCollectionInfo(ctx, c.info.Name)
	if err != nil {
		return "", 0, withCtx(ctx, fmt.Errorf("qdrant: collection info %q: %w", c.info.Name, err))
	}
	md := info.GetConfig().GetMetadata()
	model := md[MetaEmbedder].GetStringValue()
	dim := md[MetaEmbedderDimension].GetIntegerValue()
	if model == "" || dim <= 0 {
		return "", 0, nil
	}
	return model, int(dim), nil
}

// RecordEmbedder records model and dim in the collection's metadata unless
// an embedder is recorded already, and returns the record that stands.
// Qdrant has no conditional metadata update: two first opens racing with
// different embedders may both write, the last one standing (each reads
// back what stands). A server that keeps no collection metadata (before
// 1.16) ignores the write: the result is then "" and 0, no error.
func (c *collection) RecordEmbedder(ctx context.Context, model string, dim int) (string, int, error) {
	if model == "" || dim <= 0 {
		return "", 0, fmt.Errorf("qdrant: record embedder: empty model id or dimension %d", dim)
	}
	if m, d, err := c.EmbedderRecord(ctx); err != nil || m != "" {
		return m, d, err
	}
	bctx, cancel := c.bound(ctx)
	err := c.cl.UpdateCollection(bctx, &qc.UpdateCollection{
		CollectionName: c.info.Name,
		Metadata: map[string]*qc.Value{
			MetaEmbedder:          qc.NewValueString(model),
			MetaEmbedderDimension: qc.NewValueInt(int64(dim)),
		},
	})
	if err != nil {
		err = withCtx(bctx, fmt.Errorf("qdrant: record the embedder of %q: %w", c.info.Name, err))
	}
	cancel()
	if err != nil {
		return "", 0, err
	}
	return c.EmbedderRecord(ctx)
}

// As implements driver.Aser, for vectorstore.Collection.As: it supports
// **qc.Client (the collection's client) and *vectorstore.EmbedderRecorder.
func (c *collection) As(target any) bool {
	return driverutil.As(target, c.cl, c)
}
