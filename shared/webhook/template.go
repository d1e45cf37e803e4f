package webhook

import (
	"encoding/json/jsontext"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/problem"
)

// RenderMax is the most code points a rendered prompt holds: a longer one
// is cut there, never inside a code point.
const RenderMax = 100000

// redactedText is what a trigger's secret renders as.
const redactedText = "[redacted]"

// renderTimeLayout is the contract's convention for times: RFC 3339 in UTC
// with whole seconds.
const renderTimeLayout = "2006-01-02T15:04:05Z"

// Input is what a delivery gives the renderer, with the two things the
// trigger adds so that its secret never reaches a prompt. Every string is
// taken as text: invalid UTF-8 in any of them renders as U+FFFD.
type Input struct {
	// Body is the raw body as text (decoded first when the event says
	// isBase64Encoded).
	Body string
	// Headers are the delivery's headers as API Gateway gives them:
	// repeated headers comma-joined. Names may come in any case; two names
	// that differ only in case are one header, their values comma-joined
	// in the order of the names as given, sorted.
	Headers map[string]string
	// Query is the raw query string, without the "?".
	Query string
	// Method and Path are the request's method and raw path.
	Method string
	Path   string
	// SourceIP is the caller's address; "" when there is none (a value
	// that is missing, never the seed system's "unknown").
	SourceIP string
	// ReceivedAt is when the delivery was received; the zero time is a
	// missing timestamp.
	ReceivedAt time.Time
	// Event and Delivery are the delivery's event and the sender's
	// delivery id; "" for none (null in the run).
	Event    string
	Delivery string

	// Secrets are the trigger's secrets in clear (the current one and a
	// previous one still valid): each renders [redacted] wherever it
	// appears in the output. Empty strings are ignored.
	Secrets []string
	// Header is the trigger's own proof header (verify token), "" for
	// none: it counts as missing like the other proof headers.
	Header string
}

// EmptyInput is what a start now on a webhook trigger renders from: an
// empty delivery received at at. The contract says "as for an empty
// delivery ({}, no headers)"; the rest is what a delivery to the
// trigger's URL would have: method POST, path /v1/hooks/<triggerId>, no
// query, and no source address, event or delivery id (all missing).
// Secrets and Header are left for the caller to set.
func EmptyInput(triggerID string, at time.Time) Input {
	return Input{Body: "{}", Method: "POST", Path: "/v1/hooks/" + triggerID, ReceivedAt: at}
}

// templateHiddenHeaders are the proof and credential headers (lowercase): each
// counts as missing and is left out of headers. The delivery headers
// (webhook-id, webhook-timestamp, X-GitHub-Delivery, …) are not secrets
// and stay.
var templateHiddenHeaders = map[string]bool{
	"authorization":       true,
	"proxy-authorization": true,
	"cookie":              true,
	"x-hub-signature-256": true,
	"x-hub-signature":     true,
	"x-gitlab-token":      true,
	"webhook-signature":   true,
	"svix-signature":      true,
}

// refKind is what a placeholder inserts; kindText is literal text.
type refKind uint8

const (
	kindText refKind = iota
	kindBody
	kindBodyJSON
	kindHeaders
	kindQuery
	kindMethod
	kindPath
	kindSourceIP
	kindTimestamp
	kindScheduledTime
	kindEvent
	kindDelivery
	kindBodyPath   // body.<path>
	kindHeader     // headers.<name>
	kindQueryParam // query.<name>
)

// placeholderNames are the names a placeholder may use as they are (they are
// case-sensitive, as the seed system's were).
var placeholderNames = map[string]refKind{
	"body":          kindBody,
	"bodyJson":      kindBodyJSON,
	"headers":       kindHeaders,
	"query":         kindQuery,
	"method":        kindMethod,
	"path":          kindPath,
	"sourceIp":      kindSourceIP,
	"timestamp":     kindTimestamp,
	"scheduledTime": kindScheduledTime,
	"event":         kindEvent,
	"delivery":      kindDelivery,
}

const placeholderNamesText = "body, bodyJson, headers, query, method, path, sourceIp, timestamp, scheduledTime, event, delivery, body.<path>, headers.<name> and query.<name>"

// templatePart is literal text or one placeholder.
type templatePart struct {
	kind refKind
	json bool          // {{ json name }}: inserted as a JSON string literal
	text string        // the literal text; the header's lowercased name; the query parameter's name
	node *bodyPathNode // kindBodyPath
}

// bodyPathNode is one step of the body paths a template uses, as a tree: the
// body is read once per rendering, for these values only.
type bodyPathNode struct {
	id      int // its value's index; -1 for the root (the body itself)
	names   map[string]*bodyPathNode
	indexes map[int]*bodyPathNode // the children whose name is also an array index
}

// Template is a parsed prompt template. It is immutable: one may render
// from many goroutines at once.
type Template struct {
	parts []templatePart
	root  *bodyPathNode // nil when no body.<path> is used
	nodes int
}

// ParseTemplate parses a webhook trigger's prompt. Text between
// placeholders is kept as it is; a placeholder is {{ name }} or
// {{ json name }}, with spaces or tabs inside the braces optional, and
// {{{{ writes {{ (a lone "{", "}" or "}}" is text). A template that is not
// valid UTF-8, has a {{ that no }} closes, an empty placeholder, an
// unknown name or more than a name is an invalid_request error whose
// detail tells which placeholder, by its position in code points.
func ParseTemplate(src string) (*Template, error) {
	if !utf8.ValidString(src) {
		return nil, invalidTemplate("it is not valid UTF-8")
	}
	t := &Template{}
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			t.parts = append(t.parts, templatePart{kind: kindText, text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			text.WriteString(src[i:])
			break
		}
		j += i
		text.WriteString(src[i:j])
		if strings.HasPrefix(src[j:], "{{{{") {
			text.WriteString("{{")
			i = j + 4
			continue
		}
		// The position, counted only for an error: a template of many
		// placeholders parses in linear time.
		at := func() int { return utf8.RuneCountInString(src[:j]) + 1 }
		k := strings.Index(src[j+2:], "}}")
		if k < 0 {
			return nil, invalidTemplate(fmt.Sprintf("the {{ at character %d is never closed by }}", at()))
		}
		p, fault := t.placeholder(src[j+2 : j+2+k])
		if fault != "" {
			return nil, invalidTemplate(fmt.Sprintf("the {{ at character %d %s", at(), fault))
		}
		flush()
		t.parts = append(t.parts, p)
		i = j + 2 + k + 2
	}
	flush()
	return t, nil
}

func invalidTemplate(why string) error {
	return problem.New(problem.InvalidRequest, "prompt is not a valid template: "+why+". Write {{ name }} or {{ json name }} (names: "+placeholderNamesText+"), and {{{{ for a literal {{.")
}

// placeholderTrim trims the spaces and tabs a placeholder may have inside its
// braces; other white space (a line break) is not allowed there.
func placeholderTrim(s string) string { return strings.Trim(s, " \t") }

// placeholderShown is a placeholder's name as an error quotes it, shortened.
func placeholderShown(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		r := []rune(s)
		s = string(r[:40]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// placeholder parses what is between {{ and }}; fault completes the
// sentence "the {{ at character N …" when it does not parse.
func (t *Template) placeholder(inner string) (p templatePart, fault string) {
	s := placeholderTrim(inner)
	if rest, ok := strings.CutPrefix(s, "json"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		p.json = true
		s = placeholderTrim(rest)
	}
	switch {
	case s == "json" || s == "" && p.json:
		return p, "has json but no name"
	case s == "":
		return p, "has no name"
	case strings.ContainsAny(s, " \t"):
		return p, "holds " + placeholderShown(s) + ", more than one name"
	}
	if k, ok := placeholderNames[s]; ok {
		p.kind = k
		return p, ""
	}
	if path, ok := strings.CutPrefix(s, "body."); ok {
		segments := strings.Split(path, ".")
		for _, seg := range segments {
			if seg == "" || !placeholderNameChars(seg) {
				return p, "names " + placeholderShown(s) + ": a body path is member names and array indexes between dots"
			}
		}
		p.kind, p.node = kindBodyPath, t.bodyPath(segments)
		return p, ""
	}
	if h, ok := strings.CutPrefix(s, "headers."); ok {
		if !placeholderHeaderName(h) {
			return p, "names " + placeholderShown(s) + ", not a header name"
		}
		// Header names are case-insensitive: compared in lowercase.
		p.kind, p.text = kindHeader, strings.ToLower(h)
		return p, ""
	}
	if q, ok := strings.CutPrefix(s, "query."); ok && q != "" && placeholderNameChars(q) {
		// The name is compared as written with the decoded names of the
		// query string: query.a.b is the parameter "a.b".
		p.kind, p.text = kindQueryParam, q
		return p, ""
	}
	return p, "names " + placeholderShown(s) + ", which is not a known name"
}

// placeholderNameChars: a body path's member name or a query parameter's name may hold
// any character but control characters and braces (white space has been
// refused already).
func placeholderNameChars(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '{' || r == '}' {
			return false
		}
	}
	return true
}

// placeholderHeaderName: an HTTP field name (RFC 9110 token).
func placeholderHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// bodyPath adds a body path to the tree and returns its node.
func (t *Template) bodyPath(segments []string) *bodyPathNode {
	if t.root == nil {
		t.root = &bodyPathNode{id: -1}
	}
	n := t.root
	for _, seg := range segments {
		c := n.names[seg]
		if c == nil {
			c = &bodyPathNode{id: t.nodes}
			t.nodes++
			if n.names == nil {
				n.names = map[string]*bodyPathNode{}
			}
			n.names[seg] = c
			if i, ok := bodyPathIndex(seg); ok {
				if n.indexes == nil {
					n.indexes = map[int]*bodyPathNode{}
				}
				n.indexes[i] = c
			}
		}
		n = c
	}
	return n
}

// bodyPathIndex: a segment indexes an array when it is a decimal number as
// JSON writes one (0, 7, 12; not 07 or +1). Past 9 digits no body could
// hold the element.
func bodyPathIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// Render renders the prompt of a delivery: each placeholder's value as it
// is or, with json, as a JSON string literal; a missing value inserts
// nothing (no quotes either). The trigger's secrets render [redacted]
// wherever they appear in the output, and the output is cut at RenderMax
// code points; it is always valid UTF-8.
func (t *Template) Render(in Input) string {
	r := renderer{in: validInput(in), t: t}
	w := newRenderWriter(redactionsOf(r.in.Secrets))
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

	bodyJSON, headersJSON *string
	headers               map[string]string
	query                 url.Values
	paths                 []bodyPathValue
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
	case kindBodyJSON:
		if r.bodyJSON == nil {
			s := prettyBodyJSON(in.Body)
			r.bodyJSON = &s
		}
		return *r.bodyJSON, true
	case kindHeaders:
		if r.headersJSON == nil {
			s := headersJSONObject(r.headerMap())
			r.headersJSON = &s
		}
		return *r.headersJSON, true
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
		if r.paths == nil {
			r.paths = bodyPathValues(in.Body, r.t.root, r.t.nodes)
		}
		v := r.paths[p.node.id]
		return v.text, v.ok
	}
	return "", false
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

// prettyBodyJSON is a JSON body pretty-printed with two-space indents, as the
// seed system's JSON.stringify(JSON.parse(body), null, 2) did: strings
// re-escaped as JSON.stringify escapes them. Where that would change what
// the sender wrote, the text stays as written: numbers (1.0e2 stays 1.0e2,
// big integers keep their digits), member order, and repeated names (all
// kept). A body that is not one JSON value is the raw body.
func prettyBodyJSON(body string) string {
	v := jsontext.Value(body)
	if err := v.Indent(slices.Concat(bodyJSONOptions, []jsontext.Options{jsontext.WithIndent("  "), jsontext.PreserveRawStrings(false)})...); err != nil {
		return body
	}
	return string(v)
}

// bodyPathValues are the values of the template's body paths: members of the
// JSON body, whatever its content type, or, when the body is not JSON, of
// a form body's first payload member (GitHub's form mode). A path that
// does not resolve, or a body that is neither, is missing. Of repeated
// member names the last counts, as with JSON.parse.
func bodyPathValues(body string, root *bodyPathNode, n int) []bodyPathValue {
	vals := make([]bodyPathValue, n)
	if extractBodyPaths(body, root, vals) {
		settleBodyPaths(root, 0, vals)
		return vals
	}
	clear(vals)
	// A form body that does not fully decode keeps the pairs that do.
	if form, _ := url.ParseQuery(body); len(form["payload"]) > 0 && extractBodyPaths(strings.ToValidUTF8(form["payload"][0], "\uFFFD"), root, vals) {
		settleBodyPaths(root, 0, vals)
		return vals
	}
	clear(vals)
	return vals
}

// extractBodyPaths reads data, one JSON value, for the values of the tree under
// root, and reports whether data is one.
func extractBodyPaths(data string, root *bodyPathNode, vals []bodyPathValue) bool {
	e := bodyPathExtractor{d: jsontext.NewDecoder(strings.NewReader(data), bodyJSONOptions...), data: data, vals: vals}
	if err := e.value(root); err != nil {
		return false
	}
	_, err := e.d.ReadToken()
	return err == io.EOF
}

type bodyPathExtractor struct {
	d    *jsontext.Decoder
	data string
	vals []bodyPathValue
	seq  int // values read so far
}

// value reads the next value, keeping it for n (and its descendants) when
// n is not nil: a string as its text, another value as its JSON text as
// written.
func (e *bodyPathExtractor) value(n *bodyPathNode) error {
	if n == nil {
		return e.d.SkipValue()
	}
	e.seq++
	at := e.seq
	k := e.d.PeekKind()
	switch {
	case k == '"':
		tok, err := e.d.ReadToken()
		if err != nil {
			return err
		}
		e.keep(n, tok.String(), at)
	case (k == '{' || k == '[') && (n.names != nil):
		if _, err := e.d.ReadToken(); err != nil {
			return err
		}
		start := int(e.d.InputOffset()) - 1
		if k == '{' {
			for e.d.PeekKind() != '}' {
				name, err := e.d.ReadToken()
				if err != nil {
					return err
				}
				if err := e.value(n.names[name.String()]); err != nil {
					return err
				}
			}
		} else {
			for i := 0; e.d.PeekKind() != ']'; i++ {
				if err := e.value(n.indexes[i]); err != nil {
					return err
				}
			}
		}
		if _, err := e.d.ReadToken(); err != nil {
			return err
		}
		e.keep(n, e.data[start:int(e.d.InputOffset())], at)
	default:
		raw, err := e.d.ReadValue()
		if err != nil {
			return err
		}
		e.keep(n, string(raw), at)
	}
	return nil
}

func (e *bodyPathExtractor) keep(n *bodyPathNode, text string, at int) {
	if n.id >= 0 {
		e.vals[n.id] = bodyPathValue{text: text, ok: true, at: at}
	}
}

// settleBodyPaths drops the values that a repeated member name has overwritten: a
// value counts only if it was read within the last reading of each of its
// ancestors, so after it began (at). Of a repeated name the last member
// counts, as with JSON.parse; nothing is cleared while reading, so a body
// that repeats a name costs no more than one that does not.
func settleBodyPaths(n *bodyPathNode, at int, vals []bodyPathValue) {
	for _, c := range n.names {
		if v := &vals[c.id]; v.ok && v.at <= at {
			*v = bodyPathValue{}
		}
		v := vals[c.id]
		if !v.ok {
			clearBodyPaths(c, vals)
			continue
		}
		settleBodyPaths(c, v.at, vals)
	}
}

func clearBodyPaths(n *bodyPathNode, vals []bodyPathValue) {
	for _, c := range n.names {
		vals[c.id] = bodyPathValue{}
		clearBodyPaths(c, vals)
	}
}

// redactionsOf are the strings that render [redacted]: each secret, and for
// a whsec_ secret also its key (the base64 after whsec_); each of these
// also in the forms a body or query carries it in: percent-encoded (a
// form body, a query string) and with "/" written "\/" (JSON).
func redactionsOf(secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		forms := []string{s}
		if key, ok := strings.CutPrefix(s, "whsec_"); ok && key != "" {
			forms = append(forms, key)
		}
		for _, f := range forms {
			out = append(out, f, url.QueryEscape(f), strings.ReplaceAll(f, "/", `\/`))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// renderWriter builds the output: it replaces the redactions as they come,
// across the pieces written, and stops at RenderMax code points. It keeps
// back the last bytes that could still begin a redaction until it knows.
type renderWriter struct {
	b       strings.Builder
	n       int // code points in b
	done    bool
	needles []string
	longest int
	pending string
	next    []int
}

func newRenderWriter(needles []string) *renderWriter {
	w := &renderWriter{needles: needles, next: make([]int, len(needles))}
	for _, s := range needles {
		w.longest = max(w.longest, len(s))
	}
	return w
}

func (w *renderWriter) write(s string) {
	if w.done || s == "" {
		return
	}
	if !utf8.ValidString(s) { // every value is valid already: a last guard
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(w.needles) == 0 {
		w.emit(s)
		return
	}
	p := w.pending + s
	w.scan(p, len(p)-(w.longest-1))
}

func (w *renderWriter) finish() string {
	if !w.done && w.pending != "" {
		w.scan(w.pending, len(w.pending))
	}
	w.pending = ""
	return w.b.String()
}

// scan emits p up to cut, the redactions that begin before cut replaced,
// and keeps the rest pending. A redaction that begins before cut ends
// within p, so which one is longest there is known.
func (w *renderWriter) scan(p string, cut int) {
	for k := range w.next {
		w.next[k] = -2 // not looked for yet
	}
	pos := 0
	for !w.done {
		best, size := -1, 0
		for k, nd := range w.needles {
			if w.next[k] == -2 || w.next[k] >= 0 && w.next[k] < pos {
				if i := strings.Index(p[pos:], nd); i >= 0 {
					w.next[k] = pos + i
				} else {
					w.next[k] = -1
				}
			}
			if i := w.next[k]; i >= 0 && (best < 0 || i < best || i == best && len(nd) > size) {
				best, size = i, len(nd)
			}
		}
		if best < 0 || best >= cut {
			break
		}
		w.emit(p[pos:best])
		w.emit(redactedText)
		pos = best + size
	}
	cut = max(cut, pos)
	for cut > pos && cut < len(p) && !utf8.RuneStart(p[cut]) {
		cut--
	}
	w.emit(p[pos:cut])
	w.pending = p[cut:]
}

// emit appends s to the output, cut at RenderMax code points.
func (w *renderWriter) emit(s string) {
	if w.done || s == "" {
		return
	}
	room := RenderMax - w.n
	if len(s) <= room {
		w.b.WriteString(s)
		w.n += utf8.RuneCountInString(s)
	} else {
		i := 0
		for c := 0; c < room && i < len(s); c++ {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
		w.b.WriteString(s[:i])
		w.n += utf8.RuneCountInString(s[:i])
	}
	w.done = w.n >= RenderMax
}
