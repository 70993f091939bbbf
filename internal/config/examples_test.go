package config

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestShippedConfigsLoad keeps configs/dev.yaml and configs/prod.example.yaml valid.
func TestShippedConfigsLoad(t *testing.T) {
	_, f, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(f), "..", "..", "configs")
	for _, name := range []string{"dev.yaml", "prod.example.yaml"} {
		c, err := Load(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if c.EntrypointResources["worker_node"] != 1 || c.V2.Auth.TokenEnv != "MVP_INTERNAL_TOKEN" {
			t.Errorf("%s: %+v", name, c)
		}
	}
}
