package mvp

import "testing"

// TestGangNamesTheDriversGPUs: a Ray-door job with no gang whose driver holds GPUs read "gang: none (the Ray
// driver alone)" on the web page and in `mvp get`, which hid who holds GPUs (found in a user walk-through).
func TestGangNamesTheDriversGPUs(t *testing.T) {
	for _, c := range []struct {
		t    Task
		want string
	}{
		{Task{NNodes: 2, GPUsPerNode: 8}, "2 × 8 GPU"},
		{Task{Workload: WorkloadRayJob}, "none (the Ray driver alone)"},
		{Task{Workload: WorkloadRayJob, Driver: map[string]float64{"CPU": 2}}, "none (the Ray driver alone)"},
		{Task{Workload: WorkloadRayJob, Driver: map[string]float64{"GPU": 1, "CPU": 2}}, "none (the Ray driver alone, with 1 GPU)"},
		{Task{Workload: WorkloadRayJob, Driver: map[string]float64{"GPU": 0.5}}, "none (the Ray driver alone, with 0.5 GPU)"},
	} {
		if got := c.t.Gang(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t, got, c.want)
		}
	}
}
