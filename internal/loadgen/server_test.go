package loadgen_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/sqlite"
	"github.com/mvp2/mvp/internal/taskfs"
	"github.com/mvp2/mvp/internal/workload"
)

func startServer(t *testing.T) (string, string) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	set := workload.Settings{SharedRoot: t.TempDir()}
	const token = "load-token-0123456789"
	srv := &api.Server{Store: db, Files: taskfs.FS{Root: set.SharedRoot}, Clock: mvp.SystemClock{},
		Logger: slog.New(slog.DiscardHandler), Token: token, MaxBodyBytes: 1 << 20,
		Prepare: func(b []byte) (*mvp.Task, error) { return workload.Prepare(b, set) },
		Build:   func(task *mvp.Task, n int) (*mvp.JobSubmission, error) { return workload.BuildTask(task, n, set) }}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, token
}
