package sqlite

import (
	"context"
	"testing"
	"time"
)

// A logout is read back until its session would have expired, keeps the later of two ends, and an expired one is
// forgotten when the next is recorded.
func TestLogoutsAreKeptUntilTheirSessionsEnd(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	now := time.Now()
	must(t, db.AddLogout(ctx, "old", now.Add(-time.Minute)))
	must(t, db.AddLogout(ctx, "live", now.Add(time.Hour)))
	must(t, db.AddLogout(ctx, "live", now.Add(time.Minute))) // an earlier end does not shorten it
	got, err := db.Logouts(ctx, now)
	must(t, err)
	if len(got) != 1 || !got["live"].Equal(now.Add(time.Hour).UTC()) {
		t.Errorf("logouts at now: %v; want only live, until now+1h", got)
	}
	var rows int
	must(t, db.read.QueryRow(`SELECT count(*) FROM web_logouts`).Scan(&rows))
	if rows != 1 {
		t.Errorf("%d logout rows; the expired one should have been forgotten when the next was recorded", rows)
	}
}
