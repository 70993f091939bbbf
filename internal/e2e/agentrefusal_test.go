//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestRaysAgentRefusalIsARefusalNotAnOutage: Ray's head relays its job agent's 400 (here the job manager refusing
// an entrypoint_label_selector key) as an HTTP 500 whose traceback says "Request failed with status code 400".
// mvp's client took every 5xx for an outage of the job server: the loop posted such a submission again on every
// pass and admitted nothing else. Against real Ray: the answer is a refusal naming Ray's reason, not
// ErrRayUnavailable, and no job was made.
func TestRaysAgentRefusalIsARefusalNotAnOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := fmt.Sprintf("mvp2-e2e-agentrefusal-%d--a01", time.Now().UnixNano())
	err := rayc.SubmitJob(ctx, &mvp.JobSubmission{Entrypoint: "true", SubmissionID: id,
		EntrypointLabelSelector: map[string]string{"not a label key!": "x"}})
	if errors.Is(err, mvp.ErrRayUnavailable) || mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Fatalf("a submission Ray's job agent refuses: %v; want a refusal (invalid), not Ray unavailable", err)
	}
	if !strings.Contains(err.Error(), "label") {
		t.Errorf("the refusal does not say Ray's reason: %v", err)
	}
	if _, err := rayc.GetJob(ctx, id); !errors.Is(err, mvp.ErrJobNotFound) {
		t.Errorf("after the refusal, Ray's job %s: %v; want none", id, err)
	}
}
