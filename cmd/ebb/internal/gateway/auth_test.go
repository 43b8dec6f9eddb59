package gateway

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAuthRefusals(t *testing.T) {
	e := newEnv(t)
	e.mkdb("a")
	signed := func(mutate func(r *http.Request)) resp {
		req, _ := http.NewRequest("GET", e.srv.URL+"/dbs/a", nil)
		date := e.clock.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", Sign(e.key, "GET", "dbs", "dbs/a", date))
		mutate(req)
		return e.send(req)
	}
	if r := signed(func(*http.Request) {}); r.status != http.StatusOK {
		t.Fatalf("a correctly signed request: status %d: %s", r.status, r.body)
	}
	cases := []struct {
		name   string
		mutate func(r *http.Request)
		status int
		want   string
	}{
		{"no authorization", func(r *http.Request) { r.Header.Del("Authorization") }, 401, "authorization header is missing"},
		{"wrong key", func(r *http.Request) {
			other := []byte("not the key")
			r.Header.Set("Authorization", Sign(other, "GET", "dbs", "dbs/a", r.Header.Get("x-ms-date")))
		}, 401, "The input authorization token can't serve the request"},
		{"signed for another resource", func(r *http.Request) {
			r.Header.Set("Authorization", Sign(e.key, "GET", "dbs", "dbs/b", r.Header.Get("x-ms-date")))
		}, 401, "get\\ndbs\\ndbs/a\\n"},
		{"signed for another verb", func(r *http.Request) {
			r.Header.Set("Authorization", Sign(e.key, "DELETE", "dbs", "dbs/a", r.Header.Get("x-ms-date")))
		}, 401, "wrong key"},
		{"not url-encoded", func(r *http.Request) { r.Header.Set("Authorization", "type=master&ver=1.0&sig=%zz") }, 401, "not URL-encoded"},
		{"resource token", func(r *http.Request) { r.Header.Set("Authorization", "type%3Dresource%26ver%3D1.0%26sig%3Dabc") }, 401, "type \"resource\""},
		{"wrong version", func(r *http.Request) { r.Header.Set("Authorization", "type%3Dmaster%26ver%3D2.0%26sig%3Dabc") }, 401, "ver \"2.0\""},
		{"no date", func(r *http.Request) { r.Header.Del("x-ms-date") }, 401, "x-ms-date header is missing"},
		{"date not rfc1123", func(r *http.Request) {
			r.Header.Set("x-ms-date", "yesterday")
			r.Header.Set("Authorization", Sign(e.key, "GET", "dbs", "dbs/a", "yesterday"))
		}, 401, "not an RFC 1123 date"},
		{"date 20 minutes old", func(r *http.Request) {
			d := e.clock.Now().Add(-20 * time.Minute).UTC().Format(http.TimeFormat)
			r.Header.Set("x-ms-date", d)
			r.Header.Set("Authorization", Sign(e.key, "GET", "dbs", "dbs/a", d))
		}, 403, "not valid at the current time"},
		{"date 20 minutes ahead", func(r *http.Request) {
			d := e.clock.Now().Add(20 * time.Minute).UTC().Format(http.TimeFormat)
			r.Header.Set("x-ms-date", d)
			r.Header.Set("Authorization", Sign(e.key, "GET", "dbs", "dbs/a", d))
		}, 403, "not valid at the current time"},
		{"aad token with another signature", func(r *http.Request) { r.Header.Set("Authorization", "type=aad&ver=1.0&sig=e30.e30.c2lnbmF0dXJl") }, 401, "AAD token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := signed(c.mutate)
			msg := r.errBody(t, c.status)
			if !strings.Contains(msg, c.want) {
				t.Errorf("message %q lacks %q", msg, c.want)
			}
		})
	}
	// A date 10 minutes off is within the skew Cosmos DB allows.
	r := signed(func(r *http.Request) {
		d := e.clock.Now().Add(-10 * time.Minute).UTC().Format(http.TimeFormat)
		r.Header.Set("x-ms-date", d)
		r.Header.Set("Authorization", Sign(e.key, "GET", "dbs", "dbs/a", d))
	})
	e.must(r, http.StatusOK)
}

func TestAuthAAD(t *testing.T) {
	e := newEnv(t)
	enc := base64.RawURLEncoding.EncodeToString
	sig := enc([]byte(EmulatorKey))
	exp := e.clock.Now().Add(time.Hour).Unix()
	tok := enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"exp":`+strconv.FormatInt(exp, 10)+`}`)) + "." + sig
	req, _ := http.NewRequest("GET", e.srv.URL+"/dbs", nil)
	req.Header.Set("x-ms-date", e.clock.Now().UTC().Format(http.TimeFormat))
	req.Header.Set("Authorization", "type=aad&ver=1.0&sig="+tok)
	e.must(e.send(req), http.StatusOK)
	expired := enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"exp":1}`)) + "." + sig
	req.Header.Set("Authorization", "type=aad&ver=1.0&sig="+expired)
	if msg := e.send(req).errBody(t, 401); !strings.Contains(msg, "expired") {
		t.Errorf("expired token: %q", msg)
	}
}
