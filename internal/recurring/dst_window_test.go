package recurring

import (
	"testing"
	"time"
)

// TestFallBackEveryFiveMinutesInANightWindow: "a time the clock passes twice runs once, the first time" for an expression that does not name every
// hour; dstSafe.Next skipped the repeated hour's wall times at most 8 times, so 02:40–02:55 ran twice.
func TestFallBackEveryFiveMinutesInANightWindow(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	got := fires(t, "*/5 1-4 * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", "2026-10-25T04:00:00Z")
	seen := map[time.Time]time.Time{}
	for _, f := range got {
		w := naive(f.In(berlin))
		if first, dup := seen[w]; dup {
			t.Errorf("wall time %s ran twice: at %s and %s", w.Format("15:04"), first.Format(time.RFC3339), f.Format(time.RFC3339))
		}
		seen[w] = f
	}
	if len(seen) != 48 { // 01:00 to 04:55, every 5 minutes, each once
		t.Errorf("%d wall times ran; want the 48 of 01:00–04:55: %v", len(seen), got)
	}
}
