package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
)

// TestWaitTimeoutBeforeAHungServer: the spec's exit 4 is "--timeout passed first"; a server that takes the
// connection and does not answer holds the wait past its timeout, then ends it with exit 1.
func TestWaitTimeoutBeforeAHungServer(t *testing.T) {
	fastWait(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	c := &api.Client{Addr: srv.URL, Token: "t", HeaderWait: 2 * time.Second}
	began := time.Now()
	err := waitTasks(context.Background(), c, []string{"t-q"}, 200*time.Millisecond, "table", &bytes.Buffer{}, &bytes.Buffer{})
	if code := waitExit(err); code != ExitWaitTimeout || time.Since(began) > time.Second {
		t.Errorf("after %s: exit %d (%v), want %d at about the 200ms timeout", time.Since(began).Round(time.Millisecond), code, err, ExitWaitTimeout)
	}
}
