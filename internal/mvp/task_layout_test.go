package mvp

import (
	"testing"
	"unsafe"
)

// TestTaskSchedulingFieldsComeFirst keeps the fields that the scheduler reads for every waiting task in the first
// 256 bytes of Task (four cache lines for a task that starts on one). Decide walks a queue of up to 100,000 tasks that lie far apart in memory,
// and each cache line it touches per task costs a load from memory (P2 in BENCHMARKS.md); the fields that are only
// shown or stored come after them. A new field belongs after these unless Decide reads it for every task.
func TestTaskSchedulingFieldsComeFirst(t *testing.T) {
	var task Task
	hot := map[string]uintptr{
		"State":           unsafe.Offsetof(task.State) + unsafe.Sizeof(task.State),
		"Workload":        unsafe.Offsetof(task.Workload) + unsafe.Sizeof(task.Workload),
		"NNodes":          unsafe.Offsetof(task.NNodes) + unsafe.Sizeof(task.NNodes),
		"GPUsPerNode":     unsafe.Offsetof(task.GPUsPerNode) + unsafe.Sizeof(task.GPUsPerNode),
		"CreatedAt":       unsafe.Offsetof(task.CreatedAt) + unsafe.Sizeof(task.CreatedAt),
		"NextRunAt":       unsafe.Offsetof(task.NextRunAt) + unsafe.Sizeof(task.NextRunAt),
		"PendingReason":   unsafe.Offsetof(task.PendingReason) + unsafe.Sizeof(task.PendingReason),
		"LatestAttemptNo": unsafe.Offsetof(task.LatestAttemptNo) + unsafe.Sizeof(task.LatestAttemptNo),
		"Owner":           unsafe.Offsetof(task.Owner) + unsafe.Sizeof(task.Owner),
		"Priority":        unsafe.Offsetof(task.Priority) + unsafe.Sizeof(task.Priority),
		"MaxRuntimeS":     unsafe.Offsetof(task.MaxRuntimeS) + unsafe.Sizeof(task.MaxRuntimeS),
		"MaxQueuedS":      unsafe.Offsetof(task.MaxQueuedS) + unsafe.Sizeof(task.MaxQueuedS),
		"Driver":          unsafe.Offsetof(task.Driver) + unsafe.Sizeof(task.Driver),
		"AfterOK":         unsafe.Offsetof(task.AfterOK) + unsafe.Sizeof(task.AfterOK),
		"AfterAny":        unsafe.Offsetof(task.AfterAny) + unsafe.Sizeof(task.AfterAny),
	}
	for name, end := range hot {
		if end > 256 {
			t.Errorf("Task.%s ends at byte %d, past the first 256 bytes that Decide reads for every task", name, end)
		}
	}
}
