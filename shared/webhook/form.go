package webhook

import (
	"encoding/json/jsontext"
	"net/url"
	"strings"
)

// FormPayload is a form body's first "payload" member, as GitHub's form
// mode sends a delivery's JSON (application/x-www-form-urlencoded,
// payload=<json>), made valid UTF-8 as the template reads it; ok is false
// when the body has none. A form body that does not fully decode keeps
// the pairs that do.
func FormPayload(body string) (payload string, ok bool) {
	form, _ := url.ParseQuery(body)
	if len(form["payload"]) == 0 {
		return "", false
	}
	return strings.ToValidUTF8(form["payload"][0], "\uFFFD"), true
}

// jsonBody is the JSON a delivery's members (its type and action) are
// read from, as the template reads body.<path>: the raw body when it is
// one JSON value, else a form body's payload (FormPayload), else the raw
// body.
func jsonBody(body []byte) []byte {
	if jsontext.Value(body).IsValid(bodyJSONOptions...) {
		return body
	}
	if p, ok := FormPayload(string(body)); ok {
		return []byte(p)
	}
	return body
}
