package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// CookieName is the session cookie of the web page.
const CookieName = "mvp_session"

// sessions issues and checks signed session values. The value a browser holds is
// "<nonce>.<expiry unix>.<HMAC-SHA256(key, nonce.expiry)>", where the key is derived from the API token with
// HMAC: it never holds the token itself, a session made with an old token stops working when the token changes,
// and sessions outlive a restart of mvp. The CSRF token of a session is a second HMAC of its nonce.
type sessions struct {
	key []byte
	ttl time.Duration
}

func newSessions(token string, ttl time.Duration) sessions {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("mvp web session key v1"))
	return sessions{key: m.Sum(nil), ttl: ttl}
}

func (s sessions) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(strings.Join(parts, ".")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkToken compares a submitted token with the API token in constant time.
func checkToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(want)) == 1
}

// issue makes a new session value that expires ttl after now.
func (s sessions) issue(now time.Time) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	nonce := hex.EncodeToString(b)
	exp := strconv.FormatInt(now.Add(s.ttl).Unix(), 10)
	return nonce + "." + exp + "." + s.mac("session", nonce, exp), nil
}

// verify returns the session's nonce when value is a session this key made and it has not expired.
func (s sessions) verify(value string, now time.Time) (nonce string, ok bool) {
	parts := strings.Split(value, ".")
	if len(parts) != 3 {
		return "", false
	}
	if !hmac.Equal([]byte(parts[2]), []byte(s.mac("session", parts[0], parts[1]))) {
		return "", false
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || now.Unix() >= exp {
		return "", false
	}
	return parts[0], true
}

// csrf is the CSRF token of the session with this nonce; forms carry it and every POST checks it.
func (s sessions) csrf(nonce string) string { return s.mac("csrf", nonce) }

func (s sessions) checkCSRF(nonce, got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(s.csrf(nonce)))
}

// cookie is the session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
// it), scoped to /ui, Secure when the page is served over TLS (overTLS).
func (s sessions) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/ui", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: overTLS(r)}
}

// overTLS reports whether the browser reached the page over TLS. mvp serves plain HTTP, so that is a proxy in
// front of it that ends TLS and says so, as proxies do: X-Forwarded-Proto: https, or RFC 7239's Forwarded with
// proto=https, in the first (the browser-facing) entry of either, in any case. A client that claims it without
// a proxy gets a cookie its browser keeps for https only: it harms no one but itself.
func overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	first := func(h string) string { v, _, _ := strings.Cut(r.Header.Get(h), ","); return strings.TrimSpace(v) }
	if strings.EqualFold(strings.Trim(first("X-Forwarded-Proto"), `"`), "https") {
		return true
	}
	for _, pair := range strings.Split(first("Forwarded"), ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(pair), "=")
		if strings.EqualFold(k, "proto") && strings.EqualFold(strings.Trim(v, `"`), "https") {
			return true
		}
	}
	return false
}
