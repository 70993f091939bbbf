package mvp

import (
	"strings"
	"testing"
)

// TestCheckpointsInUseAdvisesWhatCanBeDone: a writer that has ended (CANCELED) but whose Ray job is still stopping
// was refused with "wait until X has ended (its Ray job stopped), or cancel it": X has ended, and mvp cancel X is
// 409 (it already ended). Such a writer is to be waited for until its job stops; a live one may also be canceled.
func TestCheckpointsInUseAdvisesWhatCanBeDone(t *testing.T) {
	const folder, writer = "mvp2-ppo-20251223-143201-7f3a", "mvp2-ppo-20251223-150000-beef"
	stopping := CheckpointsInUse(folder, writer, StateCanceled).Error()
	if strings.Contains(stopping, "cancel it") || strings.Contains(stopping, "until "+writer+" has ended") ||
		!strings.Contains(stopping, "Ray job has not stopped") || !strings.Contains(stopping, writer) {
		t.Errorf("a canceled writer whose job is stopping: %q; want it named, and to be waited for until its Ray job stops", stopping)
	}
	live := CheckpointsInUse(folder, writer, StateQueued).Error()
	if !strings.Contains(live, "cancel it") || !strings.Contains(live, writer) {
		t.Errorf("a waiting writer: %q; want it named, with waiting or canceling it", live)
	}
}
