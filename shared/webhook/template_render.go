package webhook

import (
	"encoding/json/jsontext"
	"maps"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Render renders the prompt of a delivery: each placeholder's value as it
// is or, with json, as a JSON string literal; a missing value inserts
// nothing (no quotes either). The trigger's secrets render [redacted]
// wherever they appear in the output, and the output is cut at RenderMax
// code points; it is always valid UTF-8.
func (t *Template) Render(in Input) string {
	r := renderer{in: validInput(in), t: t}
	w := newRenderWriter(redactionsOf(r.in.Secrets))
	r.limit = valueLimit(w.longest)
	for _, p := range t.parts {
		if w.done {
			break
		}
		if p.kind == kindText {
			w.write(p.text)
			continue
		}
		v, ok := r.value(p)
		if !ok {
			continue
		}
		if p.json {
			v = jsonQuote(v)
		}
		w.write(v)
	}
	return w.finish()
}

// valueLimit is how many bytes of a value can reach the output, when the
// longest redaction is longest bytes: RenderMax code points, each of at
// most utf8.UTFMax bytes or a tenth of a redaction (which renders as the
// ten code points of [redacted]), then the last redaction cut, and the
// bytes the writer looks ahead for one. A longer value renders as its
// first valueLimit bytes do.
func valueLimit(longest int) int {
	perCodePoint := max(utf8.UTFMax, (longest+len(redactedText)-1)/len(redactedText))
	return RenderMax*perCodePoint + 2*longest
}

// validInput is the input with every string valid UTF-8.
func validInput(in Input) Input {
	fix := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	out := in
	out.Body, out.Query, out.Method, out.Path = fix(in.Body), fix(in.Query), fix(in.Method), fix(in.Path)
	out.SourceIP, out.Event, out.Delivery, out.Header = fix(in.SourceIP), fix(in.Event), fix(in.Delivery), fix(in.Header)
	if in.Headers != nil {
		out.Headers = make(map[string]string, len(in.Headers))
		for _, k := range slices.Sorted(maps.Keys(in.Headers)) {
			name, v := fix(k), fix(in.Headers[k])
			if prev, ok := out.Headers[name]; ok {
				// Names that only differ in their invalid bytes are one,
				// comma-joined in the order of the names as given, sorted.
				v = prev + "," + v
			}
			out.Headers[name] = v
		}
	}
	out.Secrets = make([]string, len(in.Secrets))
	for i, s := range in.Secrets {
		out.Secrets[i] = fix(s)
	}
	return out
}

// jsonQuote is s as a JSON string literal, escaped as JSON.stringify does:
// only the quote, the backslash and control characters (no HTML escapes).
func jsonQuote(s string) string {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil { // s is valid UTF-8: cannot happen
		return ""
	}
	return string(b)
}

// renderer computes the values of one rendering, each derived one at most
// once.
type renderer struct {
	in Input
	t  *Template

	limit       int         // valueLimit
	body        *bodyValues // read at most once
	headersJSON *string
	headers     map[string]string
	query       url.Values
}

type bodyPathValue struct {
	text string
	ok   bool
	at   int // when its reading began, in values read: see settleBodyPaths
}

func (r *renderer) value(p templatePart) (string, bool) {
	in := &r.in
	switch p.kind {
	case kindBody:
		return in.Body, true
	case kindBodyJSON, kindHeaders:
		return r.pretty(p.kind), true
	case kindQuery:
		return in.Query, true
	case kindMethod:
		return in.Method, true
	case kindPath:
		return in.Path, true
	case kindSourceIP:
		return in.SourceIP, in.SourceIP != ""
	case kindTimestamp:
		if in.ReceivedAt.IsZero() {
			return "", false
		}
		return in.ReceivedAt.UTC().Format(renderTimeLayout), true
	case kindScheduledTime:
		// A delivery has no scheduled time, and a webhook trigger is never
		// fired on a schedule: the seed system's empty string, as a
		// missing value ({{ json scheduledTime }} inserts nothing).
		return "", false
	case kindEvent:
		return in.Event, in.Event != ""
	case kindDelivery:
		return in.Delivery, in.Delivery != ""
	case kindHeader:
		v, ok := r.headerMap()[p.text]
		return v, ok
	case kindQueryParam:
		if r.query == nil {
			// A pair that does not decode (a bad escape, a ";") is left
			// out; the others stay, as url.ParseQuery keeps them.
			r.query, _ = url.ParseQuery(in.Query)
		}
		if vs := r.query[p.text]; len(vs) > 0 {
			// Decoded bytes that are not UTF-8 (%ff) render as U+FFFD.
			return strings.ToValidUTF8(vs[0], "\uFFFD"), true
		}
		return "", false
	case kindBodyPath:
		v := r.bodyValues().paths[p.node.id]
		return v.text, v.ok
	}
	return "", false
}

// bodyValues are the body's values for the template, the body read once
// per rendering for all of them.
func (r *renderer) bodyValues() *bodyValues {
	if r.body == nil {
		v := readBody(r.in.Body, r.t, r.limit)
		r.body = &v
	}
	return r.body
}

// pretty is the body (kindBodyJSON) or the headers (kindHeaders) as
// pretty-printed JSON, computed at most once per rendering.
func (r *renderer) pretty(k refKind) string {
	if k == kindBodyJSON {
		return r.bodyValues().json
	}
	if r.headersJSON == nil {
		s := headersJSONObject(r.headerMap())
		r.headersJSON = &s
	}
	return *r.headersJSON
}

// headerMap is the delivery's headers by lowercase name, without the proof
// and credential headers.
func (r *renderer) headerMap() map[string]string {
	if r.headers != nil {
		return r.headers
	}
	own := strings.ToLower(r.in.Header)
	m := make(map[string]string, len(r.in.Headers))
	for _, k := range slices.Sorted(maps.Keys(r.in.Headers)) {
		name := strings.ToLower(k)
		if templateHiddenHeaders[name] || (own != "" && name == own) {
			continue
		}
		if prev, ok := m[name]; ok {
			m[name] = prev + "," + r.in.Headers[k]
		} else {
			m[name] = r.in.Headers[k]
		}
	}
	r.headers = m
	return m
}

// headersJSONObject is the headers as one JSON object pretty-printed with
// two-space indents, as JSON.stringify(headers, null, 2) writes it; the
// names are sorted (the seed system kept the order they arrived in, which
// a map does not have).
func headersJSONObject(h map[string]string) string {
	if len(h) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, k := range slices.Sorted(maps.Keys(h)) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.WriteString(jsonQuote(k))
		b.WriteString(": ")
		b.WriteString(jsonQuote(h[k]))
	}
	b.WriteString("\n}")
	return b.String()
}

// bodyJSONOptions read a body as JSON.parse does: repeated member names are
// allowed, and an escaped lone surrogate reads as U+FFFD.
var bodyJSONOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
