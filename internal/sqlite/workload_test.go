package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestEveryWorkloadIsStored: a task of every workload of mvp.WorkloadTable can be stored and listed by its
// workload. The tasks table checks the workload column against a list of names (migrations/0001_init.sql); a
// workload added to the table needs a migration that widens that check, and this test says so.
func TestEveryWorkloadIsStored(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	for i, w := range mvp.Workloads {
		task := newTask(t0)
		task.ID = fmt.Sprintf("mvp2-%s-20251223-143201-%04x", w, i)
		task.Workload = w
		if err := db.CreateTask(ctx, task); err != nil {
			t.Errorf("workload %s cannot be stored (add a migration that admits it in tasks.workload's CHECK): %v", w, err)
			continue
		}
		got, _, err := db.ListTasks(ctx, mvp.TaskFilter{Workload: w, Limit: 10})
		if err != nil || len(got) != 1 || got[0].ID != task.ID {
			t.Errorf("list workload %s: %v %v", w, got, err)
		}
	}
}
