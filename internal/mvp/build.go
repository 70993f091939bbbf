package mvp

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// BuildInfo says which build of mvp runs, from what the Go toolchain recorded in the binary (`go build` in a git
// clone records the commit): `mvp version`, the serve log's first line and the metric mvp_build_info show it.
type BuildInfo struct {
	// Revision is the git commit the binary was built from; "unknown" when the build recorded none (go test, or a
	// build outside a clone).
	Revision string `json:"revision"`
	// Modified is true when the clone had uncommitted changes.
	Modified bool `json:"modified"`
	// Time is the commit's time (RFC 3339), "" when unknown.
	Time      string `json:"time,omitempty"`
	GoVersion string `json:"go_version"`
}

// Build returns this binary's BuildInfo.
var Build = sync.OnceValue(func() BuildInfo {
	b := BuildInfo{Revision: "unknown", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.Time = s.Value
		}
	}
	return b
})

// Short is the revision's first 12 characters, with "+changes" when the clone had uncommitted ones.
func (b BuildInfo) Short() string {
	r := b.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if b.Modified {
		r += "+changes"
	}
	return r
}
