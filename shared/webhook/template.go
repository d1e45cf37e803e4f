package webhook

import (
	"fmt"
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
	parts    []templatePart
	root     *bodyPathNode // nil when no body.<path> is used
	nodes    int
	bodyJSON bool // bodyJson is used
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
		t.bodyJSON = t.bodyJSON || k == kindBodyJSON
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
