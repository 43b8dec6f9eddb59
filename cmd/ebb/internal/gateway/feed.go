package gateway

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ebbdb/ebb/engine"
)

// The change feed: GET .../docs with "A-IM: Incremental feed", read in
// LatestVersion mode. The etag of a page is where the next one starts
// (send it back as If-None-Match): the engine's continuation of the last
// change read, base64url-encoded and quoted; `"0"` is the beginning, and
// If-None-Match "*" starts from now. A page with nothing new is a 304.
// If-Modified-Since skips the changes written before it; the partition key
// header keeps one partition's changes.

const feedStart = `"0"`

func encodeFeedETag(cont string) string {
	if cont == "" {
		return feedStart
	}
	return `"` + base64.RawURLEncoding.EncodeToString([]byte(cont)) + `"`
}

func decodeFeedETag(etag string) (string, *apiError) {
	t := strings.Trim(etag, `"`)
	if t == "0" || t == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", errorf(http.StatusBadRequest, "If-None-Match %q is not a change feed etag this server returned", shorten(etag))
	}
	return string(b), nil
}

// changeFeed answers one page of the change feed.
func (q *request) changeFeed() *apiError {
	if !strings.EqualFold(strings.TrimSpace(q.r.Header.Get("A-IM")), "Incremental feed") {
		return errorf(http.StatusBadRequest, "A-IM %q is not supported: use \"Incremental feed\"", shorten(q.r.Header.Get("A-IM")))
	}
	ic, aerr := q.itemContainer()
	if aerr != nil {
		return aerr
	}
	k, hasKey, aerr := q.partitionKey()
	if aerr != nil {
		return aerr
	}
	pageMax, aerr := maxItemCount(q.r.Header.Get("x-ms-max-item-count"))
	if aerr != nil {
		return aerr
	}
	var since int64 = -1 << 62
	if v := q.r.Header.Get("If-Modified-Since"); v != "" {
		t, err := http.ParseTime(v)
		if err != nil {
			t, err = time.Parse(time.RFC1123, v)
		}
		if err != nil {
			t, err = time.Parse(time.RFC3339, v)
		}
		if err != nil {
			return errorf(http.StatusBadRequest, "If-Modified-Since %q is not an RFC 1123 date", shorten(v))
		}
		since = t.Unix()
	}
	ctx := q.r.Context()
	inm := q.r.Header.Get("If-None-Match")
	cont := ""
	if inm == "*" {
		// From now: the continuation of the newest change.
		for ch, err := range ic.c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: engine.LatestVersion}) {
			if err != nil {
				return fromEngine(err)
			}
			cont = ch.Continuation
		}
		q.w.Header().Set("etag", encodeFeedETag(cont))
		return q.reply(http.StatusNotModified, nil)
	} else if inm != "" {
		if cont, aerr = decodeFeedETag(inm); aerr != nil {
			return aerr
		}
	}
	var docs []json.RawMessage
	last := cont
	for ch, err := range ic.c.ChangeFeed(ctx, engine.ChangeFeedOptions{Mode: engine.LatestVersion, Continuation: cont}) {
		if err != nil {
			return fromEngine(err)
		}
		if len(docs) >= pageMax {
			break
		}
		last = ch.Continuation
		if ch.Body == nil || ch.TS < since || (hasKey && ch.PartitionKey != k) {
			continue
		}
		docs = append(docs, ic.withSystem(ch.Body, ch.PartitionKey, ch.ID))
	}
	h := q.w.Header()
	h.Set("etag", encodeFeedETag(last))
	if len(docs) == 0 {
		return q.reply(http.StatusNotModified, nil)
	}
	h.Set("x-ms-item-count", strconv.Itoa(len(docs)))
	q.noteRead()
	return q.replyDocuments(ic, docs)
}
