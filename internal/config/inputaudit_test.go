package config

import (
	"strings"
	"testing"
)

// TestUserCodePathIsCheckedAtStart: user_code_path is the default code_path of every jobspec, and goes into the
// task's effective spec as its code_path. A value that a jobspec's code_path may not be (relative, ~/…, with a
// space) was taken at start: every job got a PYTHONPATH entry that finds nothing, and every resubmit of such a task
// was refused (400 naming code_path, a field the user never wrote). Refused at start, naming the key.
func TestUserCodePathIsCheckedAtStart(t *testing.T) {
	for _, v := range []string{"relative/code", "~/code", "\"/my code\"", "/a/../b", "\"/a;b\""} {
		_, err := Parse([]byte("user_code_path: " + v + "\n"))
		if err == nil || !strings.Contains(err.Error(), "user_code_path") {
			t.Errorf("user_code_path: %s: %v", v, err)
		}
	}
	for _, v := range []string{"", "\"\"", "/private/user/code", "/private/user/code/"} {
		if _, err := Parse([]byte("user_code_path: " + v + "\n")); err != nil {
			t.Errorf("user_code_path: %s: %v", v, err)
		}
	}
}

// TestANegativeEntrypointResourceIsRefused: entrypoint_num_cpus below 0 is refused at start, but a negative
// entrypoint_resources value (worker_node: -1) was taken: every jobspec task's driver asks Ray for it. The Ray door
// refuses the same in a request (400); dev.yaml's is refused at start, naming the key.
func TestANegativeEntrypointResourceIsRefused(t *testing.T) {
	_, err := Parse([]byte("entrypoint_resources: {worker_node: -1}\n"))
	if err == nil || !strings.Contains(err.Error(), "entrypoint_resources.worker_node") {
		t.Errorf("worker_node: -1: %v", err)
	}
	if _, err := Parse([]byte("entrypoint_resources: {worker_node: 0.5}\n")); err != nil {
		t.Errorf("worker_node: 0.5: %v", err)
	}
}

// TestACheckpointScheduleWithATimeZoneOnlyDoesNotPanic: robfig/cron v3.0.1 slices past the end of a spec that is a
// TZ= or CRON_TZ= prefix with nothing after it (no space), so checkpoint_schedule: "TZ=UTC" made mvp serve panic
// while reading dev.yaml instead of naming the key. It is refused, naming v2.sqlite.checkpoint_schedule.
func TestACheckpointScheduleWithATimeZoneOnlyDoesNotPanic(t *testing.T) {
	for _, cs := range []string{"TZ=UTC", "CRON_TZ=Europe/Berlin", "TZ="} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("checkpoint_schedule %q: panic: %v", cs, v)
				}
			}()
			_, err := Parse([]byte("v2: {sqlite: {checkpoint_schedule: \"" + cs + "\"}}\n"))
			if err == nil || !strings.Contains(err.Error(), "v2.sqlite.checkpoint_schedule") {
				t.Errorf("checkpoint_schedule %q: %v", cs, err)
			}
		}()
	}
	if _, err := Parse([]byte("v2: {sqlite: {checkpoint_schedule: \"TZ=UTC */10 * * * *\"}}\n")); err != nil {
		t.Errorf("a time zone then a schedule: %v", err)
	}
}
