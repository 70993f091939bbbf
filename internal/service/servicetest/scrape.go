package servicetest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one scrape of /metrics, parsed from the text exposition format.
type Metrics map[string]*dto.MetricFamily

// Scrape GETs base+"/metrics" (with the bearer token unless it is empty) and parses the answer; it returns the
// HTTP status, and the metrics when the status is 200.
func Scrape(t testing.TB, base, token string) (int, Metrics) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", req.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape %s: Content-Type %q, want the text format", req.URL, ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("scrape %s: the exposition does not parse: %v\n%s", req.URL, err, body)
	}
	return resp.StatusCode, Metrics(fams)
}

// Value returns the value of the series of family name whose labels include every name=value pair of labels
// (given as "name", "value", …): a gauge's or counter's value, a histogram's sample count. ok is false when no
// series matches; more than one match is a test failure.
func (m Metrics) Value(t testing.TB, name string, labels ...string) (v float64, ok bool) {
	t.Helper()
	matches := m.Series(name, labels...)
	switch len(matches) {
	case 0:
		return 0, false
	case 1:
	default:
		t.Fatalf("%s%v matches %d series", name, labels, len(matches))
	}
	s := matches[0]
	switch {
	case s.GetGauge() != nil:
		return s.GetGauge().GetValue(), true
	case s.GetCounter() != nil:
		return s.GetCounter().GetValue(), true
	case s.GetHistogram() != nil:
		return float64(s.GetHistogram().GetSampleCount()), true
	case s.GetUntyped() != nil:
		return s.GetUntyped().GetValue(), true
	}
	t.Fatalf("%s%v: a series of an unexpected type", name, labels)
	return 0, false
}

// Series returns the series of family name whose labels include every name=value pair of labels.
func (m Metrics) Series(name string, labels ...string) []*dto.Metric {
	f := m[name]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
	for _, s := range f.GetMetric() {
		if hasLabels(s, labels) {
			out = append(out, s)
		}
	}
	return out
}

// Label returns a series' label value ("" when it has none of that name).
func Label(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func hasLabels(s *dto.Metric, labels []string) bool {
	if len(labels)%2 != 0 {
		panic(fmt.Sprintf("labels %v: want name, value pairs", labels))
	}
	for i := 0; i < len(labels); i += 2 {
		if Label(s, labels[i]) != labels[i+1] {
			return false
		}
	}
	return true
}

// WaitFirstPass waits (up to 30 s, failing t then) until the scheduler loop of the service at base has ended its
// first pass, which runs at the start. A test that moves a task's states itself, under a loop that does not tick
// again, stores its task after it: a first pass that came late (under load) synced or admitted the task meanwhile,
// and the test's compare-and-set write lost.
func WaitFirstPass(t testing.TB, base, token string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, got := Scrape(t, base, token)
		if n, ok := got.Value(t, "mvp_scheduler_pass_duration_seconds"); ok && n >= 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the scheduler loop's first pass did not end within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
