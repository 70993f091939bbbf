package scheduler_test

import (
	"testing"
	"time"
)

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

// TestHealthSaysNoSourceWhileRayCannotBeRead: while Ray cannot be read there is no view, and /healthz does not go
// on naming the source of the last one (an SRE read "cluster_source: probe" through a whole outage).
func TestHealthSaysNoSourceWhileRayCannotBeRead(t *testing.T) {
	h := newHarness(t)
	view := h.loop.Cluster.(fixedCluster).view
	view.Source, view.ProbeError = "dashboard", "the live probe could not start: …"
	h.tick()
	h.ray.down = true
	h.clock.t = h.clock.t.Add(time.Minute) // past any backoff
	h.tick()
	if hl := h.loop.Health(); hl.RayOK || hl.ClusterSource != "none" || hl.ProbeError != "" {
		t.Errorf("during the outage: %+v", hl)
	}
	h.ray.down = false
	h.clock.t = h.clock.t.Add(time.Minute)
	h.tick()
	if hl := h.loop.Health(); !hl.RayOK || hl.ClusterSource != "dashboard" {
		t.Errorf("after the outage: %+v", hl)
	}
}
