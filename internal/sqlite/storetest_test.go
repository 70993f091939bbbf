package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/mvp/storetest"
	"github.com/mvp2/mvp/internal/sqlite"
)

// TestStoreContract runs the mvp.Store contract against a real file, opened as `mvp serve` opens its database
// (sqlite.Open with the zero Options, in a folder Open has to create). The suite closes each store itself.
func TestStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) mvp.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db", "mvp.sqlite3"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}
