package api_test

import (
	"strings"
	"testing"
)

// TestTheOperatorsListingOfAnUnknownOwnerSaysSo: `mvp secrets list --owner alcie` (a typo) answered an empty list,
// exit 0, as if alice had no secrets; so did the schedules. An owner that is not a user of v2.auth.users and owns
// none is refused, naming it; a user removed from v2.auth.users whose secrets remain is still listed.
func TestTheOperatorsListingOfAnUnknownOwnerSaysSo(t *testing.T) {
	base := usersServer(t)
	for _, path := range []string{"/api/v2/secrets?owner=alcie", "/api/v2/schedules?owner=alcie"} {
		resp, b := do(t, base, "GET", path, "", "", nil)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "alcie") || !strings.Contains(string(b), "v2.auth.users") {
			t.Errorf("the operator's GET %s: %d %s; want 400 naming the owner and v2.auth.users", path, resp.StatusCode, b)
		}
	}
	for _, path := range []string{"/api/v2/secrets?owner=alice", "/api/v2/schedules?owner=alice", "/api/v2/secrets?owner=operator"} {
		if resp, b := do(t, base, "GET", path, "", "", nil); resp.StatusCode != 200 {
			t.Errorf("the operator's GET %s: %d %s; want 200 (a user with none)", path, resp.StatusCode, b)
		}
	}
}
