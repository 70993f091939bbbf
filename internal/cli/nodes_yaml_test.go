package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestNodesForgetYAMLIsOneDocumentEach: `mvp nodes forget A B -o yaml` prints one answer after another, as
// `mvp cancel A B -o yaml` does; without "---" between them the output is one YAML mapping with every key twice.
func TestNodesForgetYAMLIsOneDocumentEach(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		_, _ = w.Write([]byte(`{"node_id":"` + id + `","ip":"10.0.0.1","total_gpus":8,"forgotten":true}`))
	}))
	defer srv.Close()
	out, errb, env := serverEnv(srv.URL)
	if code := Run(context.Background(), []string{"nodes", "forget", "aaaa", "bbbb", "-o", "yaml"}, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	dec := yaml.NewDecoder(strings.NewReader(out.String()))
	n := 0
	for {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("mvp nodes forget -o yaml is not YAML documents: %v\n%s", err, out)
			}
			break
		}
		n++
	}
	if n != 2 {
		t.Errorf("mvp nodes forget aaaa bbbb -o yaml: %d YAML documents, want 2:\n%s", n, out)
	}
}
