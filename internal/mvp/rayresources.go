package mvp

import (
	"fmt"
	"strings"
)

// RayResourceUnit is the step in which Ray counts a resource (its RESOURCE_UNIT_SCALING is 10,000).
const RayResourceUnit = 0.0001

// CheckDriverResource says why a Ray job's driver cannot start asking for quantity v of the resource name among
// its entrypoint_resources (or, with name "CPU" or "GPU", as entrypoint_num_cpus or _gpus: inResources false), as
// Ray's option checks (ray_option_utils) refuse it when its job supervisor starts: after Ray has taken the job.
// nil when Ray can start it. A negative quantity is left to the callers, which already refuse it.
func CheckDriverResource(name string, v float64, inResources bool) error {
	if inResources && (name == "CPU" || name == "GPU") {
		return fmt.Errorf("Ray does not take %s among the resources; give it as entrypoint_num_%ss", name, strings.ToLower(name))
	}
	if v > 0 && v/RayResourceUnit < 1 {
		return fmt.Errorf("%g is less than the step Ray counts resources in (%g): give 0 or at least %g", v,
			RayResourceUnit, RayResourceUnit)
	}
	return nil
}
