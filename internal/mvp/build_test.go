package mvp_test

import (
	"runtime"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

func TestBuildInfo(t *testing.T) {
	b := mvp.Build()
	if b.GoVersion != runtime.Version() || b.Revision == "" {
		t.Errorf("%+v", b)
	}
	for _, c := range []struct {
		b    mvp.BuildInfo
		want string
	}{
		{mvp.BuildInfo{Revision: "6b2597a1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7"}, "6b2597a1c2d3"},
		{mvp.BuildInfo{Revision: "6b2597a1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7", Modified: true}, "6b2597a1c2d3+changes"},
		{mvp.BuildInfo{Revision: "unknown"}, "unknown"},
	} {
		if got := c.b.Short(); got != c.want {
			t.Errorf("Short(%+v) = %q, want %q", c.b, got, c.want)
		}
	}
}
