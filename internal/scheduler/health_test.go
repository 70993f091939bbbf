package scheduler_test

import "testing"

// TestHealthSaysWhyTheViewIsTheFallback: /healthz shows where the view came from and, on the dashboard's fallback,
// why the live probe did not answer; the reason goes once the probe answers again.
func TestHealthSaysWhyTheViewIsTheFallback(t *testing.T) {
	h := newHarness(t)
	view := h.loop.Cluster.(fixedCluster).view
	const why = "the live probe could not start: /usr/bin/python3 (v2.ray.python) cannot import ray " +
		"(ModuleNotFoundError: No module named 'ray'); set v2.ray.python to the Python that has Ray"
	view.Source, view.ProbeError = "dashboard", why
	h.tick()
	if hl := h.loop.Health(); !hl.RayOK || hl.ClusterSource != "dashboard" || hl.ProbeError != why {
		t.Errorf("on the fallback: %+v", hl)
	}
	view.Source, view.ProbeError = "probe", ""
	h.tick()
	if hl := h.loop.Health(); hl.ClusterSource != "probe" || hl.ProbeError != "" {
		t.Errorf("live again: %+v", hl)
	}
}
