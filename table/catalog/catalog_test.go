package catalog_test

import (
	"testing"

	"github.com/floe-io/floe/table/catalog"
	"github.com/floe-io/floe/table/catalog/catalogtest"
)

func TestMemCatalogContract(t *testing.T) {
	catalogtest.Run(t, func(*testing.T) catalog.Catalog { return &catalog.MemCatalog{} })
}
