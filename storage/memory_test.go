package storage_test

import (
	"testing"

	"github.com/stratamem/strata/storage"
	"github.com/stratamem/strata/storage/storagetest"
)

func TestMemoryConformance(t *testing.T) {
	storagetest.RunConformance(t, func(t *testing.T) storage.Store { return storage.NewMemory() })
}
