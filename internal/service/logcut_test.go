package service_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// cutRay serves a log whose copy is cut short after its first part (Ray's state API closing the stream: its
// 30 s gRPC deadline on a big file, the head restarting).
type cutRay struct{ *servicetest.Ray }

func (r cutRay) CopyJobLog(ctx context.Context, id, _ string, w io.Writer) (int64, error) {
	n, _ := io.WriteString(w, "first part\n")
	return int64(n), errors.New("copy of the driver log cut short after 11 bytes: unexpected EOF")
}

// TestACutCopyOfAnEndedLogIsNotAnEnd: reading the log of an ended attempt whose copy from Ray is cut short
// must not answer as if the log were whole (200, follow ended with LogEndEnded): the client gets a truncated log
// and no sign of it.
func TestACutCopyOfAnEndedLogIsNotAnEnd(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.TickS = 3600
	ray := cutRay{servicetest.NewRay()}
	m := servicetest.Start(t, &service.Main{Config: cfg, Ray: ray})
	ctx := context.Background()
	id := "mvp2-ppo-20251223-143201-0c1d"
	at, att := submitting(t, m, id)
	end := at
	up := *att
	up.RayStatus, up.EndTime = mvp.RaySucceeded, &end
	if err := m.Store().Apply(ctx, mvp.Change{TaskID: id, From: mvp.StateSubmitting, To: mvp.StateSucceeded, At: end, AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	err := m.Client().Logs(ctx, id, 0, true, &b)
	if err == nil {
		t.Errorf("follow of an ended log whose copy was cut short ended without an error, with %q", b.String())
	}
	b.Reset()
	err = m.Client().Logs(ctx, id, 0, false, &b)
	if err == nil {
		t.Errorf("read of an ended log whose copy was cut short succeeded with %q", b.String())
	}
}
