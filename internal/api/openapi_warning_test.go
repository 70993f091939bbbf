package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestOpenAPIDescribesTheResumeWarning: since the resume warning (a resume from a folder with no checkpoint starts
// from step 0), a dry run answers with a warning, which openapi.json's DryRun did not have, and its Created said the
// warning is only ever about a gang that cannot start. Every key of a dry run's answer is in DryRun, and Created's
// warning names both.
func TestOpenAPIDescribesTheResumeWarning(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				AllOf      []struct {
					Properties map[string]struct {
						Description string `json:"description"`
					} `json:"properties"`
				} `json:"allOf"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	m := servicetest.Start(t, nil)
	c := m.Client()
	ctx := context.Background()
	origin := ranAndCanceled(t, c)
	var dry json.RawMessage
	eventually(t, "a dry run of a resume once the origin's job stopped", func() (err error) {
		dry, err = c.ResubmitDryRun(ctx, origin.ID, api.ResubmitRequest{Resume: true})
		return err
	})
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(dry, &answer); err != nil {
		t.Fatal(err)
	}
	if _, ok := answer["warning"]; !ok {
		t.Fatalf("the dry run of a resume from a folder with no checkpoint has no warning: %s", dry)
	}
	for k := range answer {
		if _, ok := doc.Components.Schemas["DryRun"].Properties[k]; !ok {
			t.Errorf("a dry run answers with %q, which openapi.json's DryRun does not have", k)
		}
	}
	var created string
	for _, part := range doc.Components.Schemas["Created"].AllOf {
		if w, ok := part.Properties["warning"]; ok {
			created = w.Description
		}
	}
	if !strings.Contains(created, "step 0") {
		t.Errorf("openapi.json's Created.warning says %q, nothing of a resume that starts from step 0", created)
	}
}
