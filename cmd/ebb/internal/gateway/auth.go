package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// EmulatorKey is the Azure Cosmos DB emulator's well-known master key, the
// default of ebb serve.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// maxClockSkew is how far a request's x-ms-date may be from the server's
// clock, as in Cosmos DB (15 minutes).
const maxClockSkew = 15 * time.Minute

// Sign returns the Authorization header value of a request signed with the
// master key (its bytes, base64-decoded), as the SDKs compute it:
// HMAC-SHA256 over "verb\nresourceType\nresourceAddress\ndate\n\n", the verb,
// type and date lower-cased, then URL-encoded
// "type=master&ver=1.0&sig=<base64>".
func Sign(key []byte, method, resourceType, resourceAddress, date string) string {
	return url.QueryEscape("type=master&ver=1.0&sig=" + signature(key, method, resourceType, resourceAddress, date))
}

func signature(key []byte, method, resourceType, resourceAddress, date string) string {
	payload := stringToSign(method, resourceType, resourceAddress, date)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(payload))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func stringToSign(method, resourceType, resourceAddress, date string) string {
	return strings.ToLower(method) + "\n" + strings.ToLower(resourceType) + "\n" + resourceAddress + "\n" + strings.ToLower(date) + "\n\n"
}

// authToken is a parsed Authorization header.
type authToken struct {
	typ, ver, sig string
}

// parseAuth reads an Authorization header value: URL-encoded
// "type=master&ver=1.0&sig=...". It says what is missing or wrong.
func parseAuth(h string) (authToken, error) {
	if h == "" {
		return authToken{}, fmt.Errorf("the authorization header is missing: sign every request with the master key (type=master&ver=1.0&sig=...)")
	}
	dec, err := url.QueryUnescape(h)
	if err != nil {
		return authToken{}, fmt.Errorf("the authorization header is not URL-encoded correctly")
	}
	var t authToken
	for _, part := range strings.Split(dec, "&") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return authToken{}, fmt.Errorf("the authorization header has %q, not key=value", shorten(part))
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "type":
			t.typ = v
		case "ver":
			t.ver = v
		case "sig":
			t.sig = v
		}
	}
	switch {
	case t.typ == "":
		return authToken{}, fmt.Errorf("the authorization header has no type (expected type=master)")
	case !strings.EqualFold(t.typ, "master") && !strings.EqualFold(t.typ, "aad"):
		return authToken{}, fmt.Errorf("the authorization header has type %q: ebb serve accepts master-key tokens (type=master) and the emulator's AAD tokens (type=aad)", shorten(t.typ))
	case t.ver != "1.0":
		return authToken{}, fmt.Errorf("the authorization header has ver %q, not 1.0", shorten(t.ver))
	case t.sig == "":
		return authToken{}, fmt.Errorf("the authorization header has no sig")
	}
	return t, nil
}

// authError is an authentication failure: status 401 or 403.
type authError struct {
	status int
	msg    string
}

// checkAuth verifies the request's master-key signature over rt and its
// date against now. It returns nil or an authError.
func checkAuth(r *http.Request, key []byte, rt route, now time.Time) *authError {
	tok, err := parseAuth(r.Header.Get("Authorization"))
	if err != nil {
		return &authError{http.StatusUnauthorized, err.Error()}
	}
	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	if date == "" {
		return &authError{http.StatusUnauthorized, "the x-ms-date header is missing: every request needs it, in RFC 1123 form (Mon, 02 Jan 2006 15:04:05 GMT), and the signature covers it"}
	}
	when, perr := http.ParseTime(date)
	if perr != nil {
		return &authError{http.StatusUnauthorized, fmt.Sprintf("the x-ms-date header %q is not an RFC 1123 date (Mon, 02 Jan 2006 15:04:05 GMT)", shorten(date))}
	}
	if strings.EqualFold(tok.typ, "aad") {
		return checkAAD(tok.sig, key, now)
	}
	want := signature(key, r.Method, rt.kind, rt.addr, date)
	if !hmac.Equal([]byte(want), []byte(tok.sig)) {
		payload := strings.ReplaceAll(stringToSign(r.Method, rt.kind, rt.addr, date), "\n", `\n`)
		return &authError{http.StatusUnauthorized, "The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. For more info: https://aka.ms/cosmosdb-tsg-mac-signature. Server used the following payload to sign: '" + payload + "'"}
	}
	if d := now.Sub(when); d > maxClockSkew || d < -maxClockSkew {
		return &authError{http.StatusForbidden, fmt.Sprintf("The authorization token is not valid at the current time. Please create another token and retry (token start time: %s, token expiry time: %s, current server time: %s).",
			when.UTC().Format(http.TimeFormat), when.Add(maxClockSkew).UTC().Format(http.TimeFormat), now.UTC().Format(http.TimeFormat))}
	}
	return nil
}

// checkAAD accepts an AAD token as the Cosmos DB emulator does: a JWT whose
// signature part is the base64url encoding of the master key (in its base64
// form), and whose exp, if any, is not past.
func checkAAD(token string, key []byte, now time.Time) *authError {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return &authError{http.StatusUnauthorized, "the AAD token is not a JWT (header.payload.signature)"}
	}
	want := base64.RawURLEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(key)))
	if !hmac.Equal([]byte(strings.TrimRight(parts[2], "=")), []byte(want)) {
		return &authError{http.StatusUnauthorized, "the AAD token is not signed as the emulator expects: its signature part must be the base64url encoding of the master key"}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return &authError{http.StatusUnauthorized, "the AAD token's payload is not base64url"}
	}
	var claims struct {
		Exp *int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return &authError{http.StatusUnauthorized, "the AAD token's payload is not JSON"}
	}
	if claims.Exp != nil && now.Unix() >= *claims.Exp {
		return &authError{http.StatusUnauthorized, "the AAD token has expired"}
	}
	return nil
}
