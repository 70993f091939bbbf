package mvp

import (
	"strings"
	"testing"
)

// TestWorkloadTable: every entry is complete and named once, and the derived list and checks follow the table.
func TestWorkloadTable(t *testing.T) {
	seen := map[Workload]bool{}
	for i, w := range WorkloadTable {
		if w.Name == "" || (w.Module == "") != w.RayDoor || w.CPUsPerGPU <= 0 || seen[w.Name] {
			t.Errorf("entry %d is incomplete or repeated: %+v", i, w)
		}
		seen[w.Name] = true
		if Workloads[i] != w.Name || !w.Name.Valid() {
			t.Errorf("Workloads[%d] = %q, Valid(%q) = %v", i, Workloads[i], w.Name, w.Name.Valid())
		}
		if info, ok := w.Name.Info(); !ok || info != w {
			t.Errorf("Info(%q) = %+v, %v", w.Name, info, ok)
		}
		if !strings.Contains(WorkloadNames(), string(w.Name)) {
			t.Errorf("WorkloadNames() = %q lacks %q", WorkloadNames(), w.Name)
		}
	}
	if got := JobSpecWorkloadNames(); got != "ppo, grpo or sft" {
		t.Errorf("JobSpecWorkloadNames() = %q", got)
	}
	if len(Workloads) != len(WorkloadTable) {
		t.Errorf("%d workloads for %d entries", len(Workloads), len(WorkloadTable))
	}
	for _, bad := range []Workload{"", "dpo", "PPO", "ppo "} {
		if bad.Valid() {
			t.Errorf("%q is valid", bad)
		}
	}
	if last := Workloads[len(Workloads)-1]; len(Workloads) > 1 && !strings.HasSuffix(WorkloadNames(), " or "+string(last)) {
		t.Errorf("WorkloadNames() = %q", WorkloadNames())
	}
}
