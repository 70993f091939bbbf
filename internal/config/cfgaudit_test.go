package config

import (
	"strings"
	"testing"
)

// TestARayTokenEnvThatIsNotAVariableNameIsRefused: v2.ray.token_env names the variable with Ray's token, as
// v2.auth.token_env and v2.secrets.key_env name theirs, and is refused as they are when it is no variable name:
// taken as given, os.Getenv found nothing in it and every Ray call went out without the token (401 from a
// RAY_AUTH_MODE=token cluster, long after start).
func TestARayTokenEnvThatIsNotAVariableNameIsRefused(t *testing.T) {
	for _, v := range []string{"'RAY AUTH TOKEN'", "'1TOKEN'", "'$RAY_AUTH_TOKEN'"} {
		_, err := Parse([]byte("v2:\n  ray:\n    token_env: " + v + "\n"))
		if err == nil || !strings.Contains(err.Error(), "v2.ray.token_env") {
			t.Errorf("token_env %s: %v, want an error naming v2.ray.token_env", v, err)
		}
	}
	c, err := Parse([]byte("v2:\n  ray:\n    token_env: MY_RAY_TOKEN\n"))
	if err != nil || c.V2.Ray.TokenEnv != "MY_RAY_TOKEN" {
		t.Fatalf("a valid name: %v", err)
	}
}
