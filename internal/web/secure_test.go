package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestTheCookieIsSecureBehindAnHTTPSProxy: mvp serves plain HTTP, so its page is on https only behind a proxy
// that ends TLS, and the cookie is Secure only when the request says so. It was Secure only for
// "X-Forwarded-Proto: https" exactly: a proxy that says it in RFC 7239's Forwarded header (proto=https), or in a
// list or in capitals, had its users' cookie sent over plain HTTP too.
func TestTheCookieIsSecureBehindAnHTTPSProxy(t *testing.T) {
	m := servicetest.Start(t, nil)
	for _, tc := range []struct {
		header, value string
		secure        bool
	}{
		{"", "", false},
		{"X-Forwarded-Proto", "http", false},
		{"X-Forwarded-Proto", "https", true},
		{"X-Forwarded-Proto", "HTTPS", true},
		{"X-Forwarded-Proto", "https, http", true},
		{"Forwarded", "for=192.0.2.60;proto=https;by=203.0.113.43", true},
		{"Forwarded", `for="[2001:db8::1]";Proto=HTTPS`, true},
		{"Forwarded", "for=192.0.2.60;proto=http", false},
		{"Forwarded", "for=192.0.2.60", false},
	} {
		req, err := http.NewRequest(http.MethodPost, m.URL()+"/ui/login", strings.NewReader(url.Values{"token": {servicetest.Token}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if tc.header != "" {
			req.Header.Set(tc.header, tc.value)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		c := sessionCookie(resp)
		if c == nil {
			t.Fatalf("%s: %q: no cookie (%s)", tc.header, tc.value, resp.Status)
		}
		if c.Secure != tc.secure {
			t.Errorf("%s: %q: cookie Secure %v, want %v", tc.header, tc.value, c.Secure, tc.secure)
		}
	}
}
