package service_test

import (
	"net/http"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestHealthzAndMetricsNotCounted: specs/metrics.md says "/healthz, /metrics and /ui are not counted" in
// mvp_http_request_duration_seconds.
func TestHealthzAndMetricsNotCounted(t *testing.T) {
	m := servicetest.Start(t, nil)
	resp, err := http.Get(m.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	servicetest.Scrape(t, m.URL(), m.APIToken())
	_, fams := servicetest.Scrape(t, m.URL(), m.APIToken())
	for _, route := range []string{"/healthz", "/metrics"} {
		if s := fams.Series("mvp_http_request_duration_seconds", "route", route); len(s) > 0 {
			t.Errorf("route %q is counted: %v", route, s)
		}
	}
}

// TestUIIsNotCounted: "/ui [is] not counted"; the page's own reads of the API are.
func TestUIIsNotCounted(t *testing.T) {
	m := servicetest.Start(t, nil)
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.PostForm(m.URL()+"/ui/login", map[string][]string{"token": {servicetest.Token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", m.URL()+"/ui/", nil)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	for range 3 {
		r, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	_, fams := servicetest.Scrape(t, m.URL(), m.APIToken())
	if n, ok := fams.Value(t, "mvp_http_request_duration_seconds", "route", "/api/v2/queue"); ok {
		t.Errorf("3 views of /ui/ counted %v GET /api/v2/queue answers; no API request was made", n)
	}
}
