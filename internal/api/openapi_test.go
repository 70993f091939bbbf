package api

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/raycompat"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestOpenAPICoversEveryRoute keeps the document true: every route the server serves is in it, with its method.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi version %q", doc.OpenAPI)
	}
	s := &Server{}
	served := map[string]bool{}
	for _, rt := range s.routes() {
		// OpenAPI spells a wildcard that matches the rest of the path {path}; ServeMux spells it {path...}. "{$}"
		// (ServeMux: this path exactly, nothing below it) is not part of the path itself.
		pattern := strings.TrimSuffix(strings.ReplaceAll(rt.pattern, "...}", "}"), "{$}")
		if rt.text && !strings.HasPrefix(pattern, RayPrefix+"/") {
			pattern = RayPrefix + pattern // the door's root twin of a /ray path (the document's description says so)
		}
		served[pattern+" "+rt.method] = true
		ops, ok := doc.Paths[pattern]
		if !ok {
			t.Errorf("route %s %s is not in openapi.json", rt.method, pattern)
			continue
		}
		if _, ok := ops[strings.ToLower(rt.method)]; !ok {
			t.Errorf("method %s of %s is not in openapi.json", rt.method, pattern)
		}
	}
	for p, ops := range doc.Paths {
		for m := range ops {
			if !served[p+" "+strings.ToUpper(m)] {
				t.Errorf("openapi.json documents %s %s, which the server does not serve", m, p)
			}
		}
	}
}

// TestOpenAPIAgreesWithTheCode: the document's enums and object keys are the code's, so that a client generated
// from it, or one that validates answers against it, accepts what the server sends (it lacked three failure
// kinds, an Attempt key and the door's package names; found in review).
func TestOpenAPIAgreesWithTheCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum       []string `json:"enum"`
				Required   []string `json:"required"`
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name   string `json:"name"`
				Schema struct {
					Pattern string `json:"pattern"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	sch := doc.Components.Schemas
	var kinds []string
	for _, k := range mvp.FailureKinds {
		kinds = append(kinds, string(k))
	}
	if got := sch["Attempt"].Properties["failure_kind"].Enum; !slices.Equal(got, kinds) {
		t.Errorf("Attempt.failure_kind enum %q, want %q", got, kinds)
	}
	var states []string
	for _, s := range mvp.States {
		states = append(states, string(s))
	}
	if got := sch["State"].Enum; !slices.Equal(got, states) {
		t.Errorf("State enum %q, want %q", got, states)
	}
	for name, v := range map[string]any{"Attempt": mvp.Attempt{}, "Task": mvp.Task{}} {
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			key, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if key == "" || key == "-" {
				continue
			}
			if _, ok := sch[name].Properties[key]; !ok {
				t.Errorf("%s.%s is sent but not in openapi.json", name, key)
			}
		}
	}
	// The queue's wait codes: the one enum that lists "gpus_busy" names every code the scheduler gives.
	var codes []string
	for _, c := range scheduler.WaitCodes {
		codes = append(codes, string(c))
	}
	slices.Sort(codes)
	listed := regexp.MustCompile(`"enum": \[[^\]]*"gpus_busy"[^\]]*\]`).FindAllString(string(OpenAPI), -1)
	if len(listed) != 1 {
		t.Errorf("%d enums list gpus_busy in openapi.json, want 1", len(listed))
	} else {
		var got []string
		for _, m := range regexp.MustCompile(`"([a-z_]+)"`).FindAllStringSubmatch(strings.TrimPrefix(listed[0], `"enum"`), -1) {
			got = append(got, m[1])
		}
		slices.Sort(got)
		if !slices.Equal(got, codes) {
			t.Errorf("the queue's code enum %q, want the scheduler's %q", got, codes)
		}
	}
	for _, f := range []string{"model_path", "train_file"} {
		if !slices.Contains(sch["JobSpec"].Required, f) {
			t.Errorf("JobSpec.%s is required by every jobspec workload but not in openapi.json's required", f)
		}
	}
	for m, op := range doc.Paths["/ray/api/packages/{protocol}/{name}"] {
		for _, p := range op.Parameters {
			if p.Name == "name" && p.Schema.Pattern != raycompat.PackagePattern.String() {
				t.Errorf("%s package name pattern %q, want the door's %q", m, p.Schema.Pattern, raycompat.PackagePattern)
			}
		}
	}
}
