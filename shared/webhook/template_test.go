package webhook

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/problem"
)

const templateSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+a/b=" // not a real one

// templateDelivery is a GitHub pull request delivery as the hook hands it over.
func templateDelivery() Input {
	return Input{
		Body: `{"action":"opened","pull_request":{"title":"Fix \"it\"\n\u00e9","number":7,` +
			`"labels":[ {"name":"bug"} ]},"commits":[{"message":"one"},{"message":"two"}],` +
			`"n":1.50,"ok":true,"nothing":null,"0":"zero","dup":"first","dup":"last"}`,
		Headers: map[string]string{
			"Content-Type":        "application/json",
			"X-GitHub-Event":      "pull_request",
			"X-GitHub-Delivery":   "d-1",
			"x-many":              "a,b",
			"X-Hub-Signature-256": "sha256=abc",
			"X-Hub-Signature":     "sha1=abc",
			"Authorization":       "Bearer x",
			"Proxy-Authorization": "Basic x",
			"Cookie":              "s=x",
			"X-Gitlab-Token":      "x",
			"Webhook-Signature":   "v1,x",
			"svix-signature":      "v1,x",
			"X-Own-Secret":        "x",
			"webhook-id":          "msg_1",
		},
		Query:      "a=1&a=2&b=x%20y&c=d+e&e&f.g=h",
		Method:     "POST",
		Path:       "/v1/hooks/trg_00000000-0000-4000-8000-000000000000",
		SourceIP:   "203.0.113.9",
		ReceivedAt: time.Date(2026, 1, 15, 13, 0, 0, 500_000_000, time.FixedZone("CET", 3600)),
		Event:      "pull_request",
		Delivery:   "d-1",
		Header:     "x-own-SECRET",
	}
}

func renderTemplate(t *testing.T, src string, in Input) string {
	t.Helper()
	tpl, err := ParseTemplate(src)
	if err != nil {
		t.Fatalf("ParseTemplate(%q): %v", src, err)
	}
	return tpl.Render(in)
}

// deliveryWith returns the delivery changed by f.
func deliveryWith(f func(*Input)) Input {
	in := templateDelivery()
	f(&in)
	return in
}

func TestRenderNames(t *testing.T) {
	const headersJSON = "{\n" +
		`  "content-type": "application/json",` + "\n" +
		`  "webhook-id": "msg_1",` + "\n" +
		`  "x-github-delivery": "d-1",` + "\n" +
		`  "x-github-event": "pull_request",` + "\n" +
		`  "x-many": "a,b"` + "\n}"
	form := func(in *Input) {
		in.Body = "payload=%7B%22action%22%3A%22opened%22%2C%22n%22%3A%5B1%2C2%5D%7D&other=1"
		in.Headers = map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	}
	for _, c := range []struct {
		rule, src string
		in        Input
		want      string
	}{
		{"body: the raw body as text", "{{body}}", deliveryWith(func(in *Input) { in.Body = ` {"a": 1} ` }), ` {"a": 1} `},
		{"bodyJson: the JSON body pretty-printed with two-space indents", "{{bodyJson}}",
			deliveryWith(func(in *Input) { in.Body = `{"a":[1,{}],"b":{},"c":"\u00e9\/<>"}` }),
			"{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": {},\n  \"c\": \"é/<>\"\n}"},
		{"bodyJson: numbers, order and repeated names as written", "{{bodyJson}}",
			deliveryWith(func(in *Input) { in.Body = `{"z":1.0e2,"a":12345678901234567890,"z":2}` }),
			"{\n  \"z\": 1.0e2,\n  \"a\": 12345678901234567890,\n  \"z\": 2\n}"},
		{"bodyJson: else the raw body", "{{bodyJson}}", deliveryWith(func(in *Input) { in.Body = `{"a": 1} trailing` }), `{"a": 1} trailing`},
		{"bodyJson: an empty body is the raw (empty) body", "[{{bodyJson}}]", deliveryWith(func(in *Input) { in.Body = "" }), "[]"},
		{"headers: every header as one JSON object, names lowercased, proof and credential headers left out", "{{headers}}", templateDelivery(), headersJSON},
		{"headers: no headers is an empty object", "{{headers}}", deliveryWith(func(in *Input) { in.Headers = nil }), "{}"},
		{"headers: names that differ in case are one header, comma-joined", "{{headers}}",
			deliveryWith(func(in *Input) { in.Headers = map[string]string{"X-A": "1", "x-a": "2"} }), "{\n  \"x-a\": \"1,2\"\n}"},
		{"query: the raw query string", "{{query}}", templateDelivery(), "a=1&a=2&b=x%20y&c=d+e&e&f.g=h"},
		{"method", "{{method}}", templateDelivery(), "POST"},
		{"path: the raw path", "{{path}}", deliveryWith(func(in *Input) { in.Path = "/v1/hooks/a%2Fb" }), "/v1/hooks/a%2Fb"},
		{"sourceIp", "{{sourceIp}}", templateDelivery(), "203.0.113.9"},
		{"sourceIp: none is missing, not the seed's unknown", "[{{sourceIp}}|{{json sourceIp}}]", deliveryWith(func(in *Input) { in.SourceIP = "" }), "[|]"},
		{"timestamp: when it was received, RFC 3339 UTC whole seconds", "{{timestamp}}", templateDelivery(), "2026-01-15T12:00:00Z"},
		{"timestamp: none is missing", "[{{json timestamp}}]", deliveryWith(func(in *Input) { in.ReceivedAt = time.Time{} }), "[]"},
		{"scheduledTime: empty for a delivery", "[{{scheduledTime}}|{{json scheduledTime}}]", templateDelivery(), "[|]"},
		{"event", "{{event}}", templateDelivery(), "pull_request"},
		{"event: null is missing", "[{{json event}}]", deliveryWith(func(in *Input) { in.Event = "" }), "[]"},
		{"delivery", "{{delivery}}", templateDelivery(), "d-1"},
		{"delivery: null is missing", "[{{json delivery}}]", deliveryWith(func(in *Input) { in.Delivery = "" }), "[]"},

		{"body.<path>: a string as its text", "{{body.pull_request.title}}", templateDelivery(), "Fix \"it\"\né"},
		{"body.<path>: another value as its JSON text as written", "{{body.pull_request.labels}}|{{body.n}}|{{body.ok}}|{{body.nothing}}",
			templateDelivery(), `[ {"name":"bug"} ]|1.50|true|null`},
		{"body.<path>: an object as written", "{{body.pull_request}}", deliveryWith(func(in *Input) { in.Body = `{"pull_request": { "a" : 1 }}` }), `{ "a" : 1 }`},
		{"body.<path>: array indexes", "{{body.commits.0.message}},{{body.commits.1.message}},{{body.pull_request.labels.0.name}}", templateDelivery(), "one,two,bug"},
		{"body.<path>: an index past the end is missing", "[{{body.commits.2.message}}]", templateDelivery(), "[]"},
		{"body.<path>: an index as JSON writes numbers only", "[{{body.commits.01.message}}]", templateDelivery(), "[]"},
		{"body.<path>: digits name an object's member", "{{body.0}}", templateDelivery(), "zero"},
		{"body.<path>: of a repeated name the last counts", "{{body.dup}}", templateDelivery(), "last"},
		{"body.<path>: a repeated name's earlier members are gone", "[{{body.a.b}}]", deliveryWith(func(in *Input) { in.Body = `{"a":{"b":1},"a":{"c":2}}` }), "[]"},
		{"body.<path>: a repeated name's deeper members are gone", "{{body.a.b}}[{{body.a.b.c}}]", deliveryWith(func(in *Input) { in.Body = `{"a":{"b":{"c":1}},"a":{"b":2}}` }), "2[]"},
		{"body.<path>: the last of a repeated name, deep", "{{body.a.b}} {{body.0.a}}", deliveryWith(func(in *Input) { in.Body = `{"a":{"b":1,"b":3},"a":{"x":0,"b":2},"0":{"a":[1],"a":"y"}}` }), "2 y"},
		{"body.<path>: member names are case-sensitive", "[{{body.Action}}]", templateDelivery(), "[]"},
		{"body.<path>: a member of a string is missing", "[{{body.action.x}}]", templateDelivery(), "[]"},
		{"body.<path>: the root may be an array", "{{body.1}}", deliveryWith(func(in *Input) { in.Body = `["a","b"]` }), "b"},
		{"body.<path>: parsed whatever the content type", "{{body.action}}",
			deliveryWith(func(in *Input) { in.Headers = map[string]string{"Content-Type": "text/plain"} }), "opened"},
		{"body.<path>: a form body's payload member", "{{body.action}} {{body.n.1}}", deliveryWith(form), "opened 2"},
		{"body.<path>: bodyJson of a form body is the raw body", "{{bodyJson}}", deliveryWith(form), deliveryWith(form).Body},
		{"body.<path>: a body neither JSON nor a form with a JSON payload is missing", "[{{body.action}}]", deliveryWith(func(in *Input) { in.Body = "action=opened" }), "[]"},
		{"body.<path>: an escaped lone surrogate reads as U+FFFD", "{{body.s}}", deliveryWith(func(in *Input) { in.Body = `{"s":"a\ud800b"}` }), "a\uFFFDb"},

		{"headers.<name>: case-insensitive", "{{headers.x-github-event}} {{headers.X-GITHUB-EVENT}}", templateDelivery(), "pull_request pull_request"},
		{"headers.<name>: repeated headers comma-joined", "{{headers.X-Many}}", templateDelivery(), "a,b"},
		{"headers.<name>: absent is missing", "[{{json headers.x-nope}}]", templateDelivery(), "[]"},
		{"headers.<name>: the proof and credential headers are missing",
			"[{{headers.authorization}}{{headers.proxy-authorization}}{{headers.cookie}}{{headers.x-hub-signature-256}}{{headers.x-hub-signature}}" +
				"{{headers.x-gitlab-token}}{{headers.webhook-signature}}{{headers.svix-signature}}{{json headers.X-Own-Secret}}]",
			templateDelivery(), "[]"},
		{"headers.<name>: the delivery headers are not proofs", "{{headers.webhook-id}}", templateDelivery(), "msg_1"},

		{"query.<name>: the first value", "{{query.a}}", templateDelivery(), "1"},
		{"query.<name>: decoded", "{{query.b}}|{{query.c}}", templateDelivery(), "x y|d e"},
		{"query.<name>: a name without a value is empty, not missing", "[{{json query.e}}]", templateDelivery(), `[""]`},
		{"query.<name>: dots belong to the name", "{{query.f.g}}", templateDelivery(), "h"},
		{"query.<name>: absent is missing", "[{{json query.z}}]", templateDelivery(), "[]"},

		{"json: a JSON string literal, quoted and escaped", "{{json body.pull_request.title}}", templateDelivery(), `"Fix \"it\"\né"`},
		{"json: control characters escaped, HTML not", "{{json body}}", deliveryWith(func(in *Input) { in.Body = "<a>\t\x01&\u2028" }), "\"<a>\\t\\u0001&\u2028\""},
		{"json: a non-string value is quoted as its text", "{{json body.n}}", templateDelivery(), `"1.50"`},
		{"json: a missing value inserts nothing, quotes included", "[{{json body.missing}}]", templateDelivery(), "[]"},
		{"json: an empty value is an empty literal", "{{json query}}", deliveryWith(func(in *Input) { in.Query = "" }), `""`},

		{"spaces inside the braces optional", "{{method}}{{ method }}{{\tjson   method\t}}", templateDelivery(), `POSTPOST"POST"`},
		{"{{{{ writes {{", "{{{{method}} {{{{ {{method}}", templateDelivery(), "{{method}} {{ POST"},
		{"lone braces are text", "a } b { c }} {d}", templateDelivery(), "a } b { c }} {d}"},
		{"text is kept as it is", "Review ✓\n\t{{event}}\n", templateDelivery(), "Review ✓\n\tpull_request\n"},
	} {
		if got := renderTemplate(t, c.src, c.in); got != c.want {
			t.Errorf("%s: %q rendered\n%q, want\n%q", c.rule, c.src, got, c.want)
		}
	}
}

// The seed system's own examples render as they did there.
func TestRenderSeedExamples(t *testing.T) {
	in := Input{
		Body:       `{"event": "test"}`,
		Method:     "POST",
		Path:       "/webhook",
		Headers:    map[string]string{"content-type": "application/json", "x-custom": "value"},
		Query:      "foo=bar",
		SourceIP:   "192.168.1.1",
		ReceivedAt: time.Date(2024, 1, 15, 12, 0, 0, 0, time.UTC),
	}
	for _, c := range []struct{ src, body, want string }{
		{"Body: {{body}}", "", `Body: {"event": "test"}`},
		{"Body:\n{{bodyJson}}", "", "Body:\n{\n  \"event\": \"test\"\n}"},
		{"Body: {{bodyJson}}", "plain text body", "Body: plain text body"},
		{"Process this {{method}} webhook to {{path}}:\n\nRequest body:\n{{bodyJson}}\n\nHeaders:\n{{headers}}\n\nQuery: {{query}}\nFrom: {{sourceIp}}\nAt: {{timestamp}}", "",
			"Process this POST webhook to /webhook:\n\nRequest body:\n{\n  \"event\": \"test\"\n}\n\nHeaders:\n" +
				"{\n  \"content-type\": \"application/json\",\n  \"x-custom\": \"value\"\n}\n\nQuery: foo=bar\nFrom: 192.168.1.1\nAt: 2024-01-15T12:00:00Z"},
	} {
		in := in
		if c.body != "" {
			in.Body = c.body
		}
		if got := renderTemplate(t, c.src, in); got != c.want {
			t.Errorf("%q rendered\n%q, want\n%q", c.src, got, c.want)
		}
	}
}

func TestParseTemplateRefuses(t *testing.T) {
	for _, c := range []struct{ rule, src, detail string }{
		{"an unclosed {{", "Hello {{ body", "the {{ at character 7 is never closed by }}"},
		{"an unclosed {{ after a placeholder", "{{body}} é {{", "the {{ at character 12 is never closed"},
		{"an empty placeholder", "{{ }}", "has no name"},
		{"json without a name", "{{json}}", "has json but no name"},
		{"json and spaces without a name", "{{ json  }}", "has json but no name"},
		{"an unknown name", "{{ nope }}", `names "nope", which is not a known name`},
		{"names are case-sensitive", "{{ Body }}", `"Body"`},
		{"json is lowercase", "{{ JSON body }}", "more than one name"},
		{"more than a name", "{{ body foo }}", `holds "body foo", more than one name`},
		{"a line break inside the braces", "{{ body\n}}", "not a known name"},
		{"an empty body path", "{{ body. }}", "a body path is member names and array indexes between dots"},
		{"an empty path segment", "{{ body.a..b }}", "between dots"},
		{"a brace in a name", "{{{ body }}}", `holds "{ body", more than one name`},
		{"a brace in a path", "{{{body.a}}}", `names "{body.a", which is not a known name`},
		{"a brace inside a path", "{{body.a{b}}", `names "body.a{b"`},
		{"a name under bodyJson", "{{ bodyJson.a }}", "not a known name"},
		{"an empty header name", "{{ headers. }}", "not a header name"},
		{"not a header name", "{{ headers.a:b }}", "not a header name"},
		{"an empty query name", "{{ query. }}", "not a known name"},
		{"an unknown name after text", "ok {{body}} {{x}}", "the {{ at character 13 names"},
		{"not valid UTF-8", "{{body}}\xff", "it is not valid UTF-8"},
	} {
		_, err := ParseTemplate(c.src)
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.InvalidRequest {
			t.Errorf("%s: ParseTemplate(%q) = %v, want an invalid_request", c.rule, c.src, err)
			continue
		}
		if !strings.HasPrefix(pe.Detail, "prompt is not a valid template: ") || !strings.Contains(pe.Detail, c.detail) {
			t.Errorf("%s: detail %q, want it to hold %q", c.rule, pe.Detail, c.detail)
		}
	}
	long := "{{ " + strings.Repeat("x", 100) + " }}"
	if _, err := ParseTemplate(long); err == nil || strings.Contains(err.Error(), strings.Repeat("x", 41)) {
		t.Errorf("a long name is quoted shortened: %v", err)
	}
}

func TestParseTemplateAccepts(t *testing.T) {
	for _, src := range []string{"", "plain", "{{body}}", "{{ json body.a.0.b }}", "{{headers.X-Hub_x.y}}", "{{query.a[]}}", "{{body.é.ü}}", "{{{{", "}}"} {
		if _, err := ParseTemplate(src); err != nil {
			t.Errorf("ParseTemplate(%q): %v", src, err)
		}
	}
}

func TestRenderRedactsSecrets(t *testing.T) {
	key := strings.TrimPrefix(templateSecret, "whsec_")
	secret := func(body string) Input {
		in := templateDelivery()
		in.Body = body
		in.Secrets = []string{templateSecret, "", "whsec_previousPREVIOUSprevious"}
		return in
	}
	for _, c := range []struct {
		rule, src string
		in        Input
		want      string
	}{
		{"in the raw body", "{{body}}", secret("a " + templateSecret + " b"), "a [redacted] b"},
		{"in the pretty body", "{{bodyJson}}", secret(`{"s":"` + templateSecret + `"}`), "{\n  \"s\": \"[redacted]\"\n}"},
		{"in the JSON body with / escaped", "{{body}}", secret(`{"s":"` + strings.ReplaceAll(templateSecret, "/", `\/`) + `"}`), `{"s":"[redacted]"}`},
		{"in a body path", "{{body.s}}", secret(`{"s":"x` + templateSecret + `y"}`), "x[redacted]y"},
		{"in a quoted value", "{{json body.s}}", secret(`{"s":"` + templateSecret + `"}`), `"[redacted]"`},
		{"the key without whsec_", "{{body}}", secret("k=" + key), "k=[redacted]"},
		{"percent-encoded in a form body", "{{body}}", secret("payload=" + strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(templateSecret)), "payload=[redacted]"},
		{"the previous secret", "{{body}}", secret("whsec_previousPREVIOUSprevious"), "[redacted]"},
		{"every time", "{{body}}{{body}}", secret(templateSecret + templateSecret), strings.Repeat("[redacted]", 4)},
		{"in a header", "{{headers.x-echo}}", deliveryWith(func(in *Input) {
			in.Headers = map[string]string{"X-Echo": "t " + templateSecret}
			in.Secrets = []string{templateSecret}
		}), "t [redacted]"},
		{"in the query", "{{query}} {{query.s}}", deliveryWith(func(in *Input) {
			in.Query = "s=" + strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(templateSecret)
			in.Secrets = []string{templateSecret}
		}), "s=[redacted] [redacted]"},
		{"across the template's text and a value", "see whsec_MfKQ9r8{{body}}", secret(strings.TrimPrefix(templateSecret, "whsec_MfKQ9r8") + "!"), "see [redacted]!"},
		{"across two values", "{{body.a}}{{body.b}}", secret(`{"a":"` + templateSecret[:20] + `","b":"` + templateSecret[20:] + `"}`), "[redacted]"},
		{"at the very end", "x{{body}}", secret(templateSecret), "x[redacted]"},
		{"a part of a secret stays", "{{body}}", secret(templateSecret[:30]), templateSecret[:30]},
		{"the proof headers are never in headers", "{{headers}}", deliveryWith(func(in *Input) {
			in.Headers = map[string]string{"Authorization": "Bearer " + templateSecret, "X-Gitlab-Token": templateSecret}
		}), "{}"},
	} {
		if got := renderTemplate(t, c.src, c.in); got != c.want {
			t.Errorf("%s: %q rendered\n%q, want\n%q", c.rule, c.src, got, c.want)
		}
	}
}

func TestRenderCutsAtMax(t *testing.T) {
	check := func(rule, got, want string) {
		t.Helper()
		if !utf8.ValidString(got) {
			t.Errorf("%s: not valid UTF-8", rule)
		}
		if n := utf8.RuneCountInString(got); n > RenderMax {
			t.Errorf("%s: %d code points", rule, n)
		}
		if got != want {
			t.Errorf("%s: got %d code points (%q…), want %d", rule, utf8.RuneCountInString(got), got[max(0, len(got)-20):], utf8.RuneCountInString(want))
		}
	}
	body := func(s string) Input { return Input{Body: s} }
	check("exactly the limit is not cut", renderTemplate(t, "{{body}}", body(strings.Repeat("a", RenderMax))), strings.Repeat("a", RenderMax))
	check("cut in code points, not bytes", renderTemplate(t, "{{body}}", body(strings.Repeat("é", RenderMax+1))), strings.Repeat("é", RenderMax))
	check("never inside a 4-byte code point", renderTemplate(t, "x{{body}}", body(strings.Repeat("😀", RenderMax))), "x"+strings.Repeat("😀", RenderMax-1))
	check("the text of the template counts", renderTemplate(t, strings.Repeat("ü", RenderMax-1)+"{{body}}", body("abc")), strings.Repeat("ü", RenderMax-1)+"a")
	check("over many placeholders", renderTemplate(t, strings.Repeat("{{body}}", 300), body(strings.Repeat("b", 1000))), strings.Repeat("b", RenderMax))
	withSecret := Input{Body: strings.Repeat("a", RenderMax-5) + templateSecret, Secrets: []string{templateSecret}}
	check("a redaction at the limit is cut there too", renderTemplate(t, "{{body}}", withSecret), strings.Repeat("a", RenderMax-5)+"[reda")
	many := Input{Body: strings.Repeat(templateSecret, 30000), Secrets: []string{templateSecret}}
	check("redactions shorten what is cut", renderTemplate(t, "{{body}}", many), strings.Repeat("[redacted]", RenderMax/10))
	short := Input{Body: strings.Repeat("0", 20000), Secrets: []string{"0"}}
	check("a redaction longer than its secret is cut too", renderTemplate(t, "{{body}}", short), strings.Repeat("[redacted]", RenderMax/10))

	// bodyJson of a JSON string is the string as written: RenderMax code
	// points in all, then one more.
	str := func(n int) Input { return Input{Body: `"` + strings.Repeat("é", n-2) + `"`} }
	check("bodyJson of exactly the limit is not cut", renderTemplate(t, "{{bodyJson}}", str(RenderMax)), `"`+strings.Repeat("é", RenderMax-2)+`"`)
	check("bodyJson past the limit is cut there", renderTemplate(t, "{{bodyJson}}", str(RenderMax+1)), `"`+strings.Repeat("é", RenderMax-1))

	// The pretty-printing stops past what can reach the output: with a
	// long secret, a tenth of it for each code point rendered. A body of
	// long secrets, pretty-printed past that, renders as its whole
	// pretty-printed text does.
	long := strings.Repeat("s", 200)
	element := `"` + strings.Repeat(long, 100) + `"`
	secrets := Input{Body: "[" + strings.Repeat(element+",", 120) + element + "]", Secrets: []string{long}}
	whole := "[\n" + strings.Repeat("  "+element+",\n", 120) + "  " + element + "\n]"
	if len(whole) <= valueLimit(len(long)) {
		t.Fatalf("the body pretty-prints to %d bytes, not past the value limit %d", len(whole), valueLimit(len(long)))
	}
	want := []rune(redactAllRef(whole, []string{long}))[:RenderMax]
	check("bodyJson past the value limit renders as the whole would", renderTemplate(t, "{{bodyJson}}", secrets), string(want))
}

func TestRenderNeverInvalidUTF8(t *testing.T) {
	in := Input{
		Body:     "a\xffb",
		Headers:  map[string]string{"X-\xfe": "v\xc3", "X-\xff": "w"},
		Query:    "q=\xff&r=%ff",
		Method:   "P\xffST",
		Path:     "/\xc0",
		SourceIP: "\xed\xa0\x80",
		Event:    "e\xff",
		Delivery: "d\xff",
		Secrets:  []string{"s\xff"},
	}
	src := "{{body}}{{bodyJson}}{{query.r}}{{headers}}{{query}}{{query.q}}{{json query.r}}{{method}}{{path}}{{sourceIp}}{{event}}{{json delivery}}{{body.a}}"
	got := renderTemplate(t, src, in)
	if !utf8.ValidString(got) {
		t.Fatalf("not valid UTF-8: %q", got)
	}
	if !strings.Contains(got, "a\uFFFDb") {
		t.Errorf("invalid bytes render as U+FFFD: %q", got)
	}
	if !strings.Contains(got, "\"x-\uFFFD\": \"v\uFFFD,w\"") {
		t.Errorf("header names that are one once valid are joined: %q", got)
	}
}

func TestEmptyInput(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 30, 15, 999_000_000, time.UTC)
	in := EmptyInput("trg_1", at)
	got := renderTemplate(t, "{{body}}|{{bodyJson}}|{{headers}}|{{query}}|{{method}} {{path}}|{{sourceIp}}|{{timestamp}}|{{json event}}{{json delivery}}{{json body.a}}{{json headers.x}}{{json query.a}}", in)
	if want := "{}|{}|{}||POST /v1/hooks/trg_1||2026-03-01T09:30:15Z|"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The tree of body paths is read once, for every path of the template.
func TestRenderSharesPaths(t *testing.T) {
	in := Input{Body: `{"a":{"b":[10,{"c":"x"}],"d":true},"e":"f"}`}
	got := renderTemplate(t, "{{body.a}}|{{body.a.b}}|{{body.a.b.1.c}}|{{body.a.b.0}}|{{body.a.d}}|{{body.e}}|{{body.a.b.1.c}}", in)
	if want := `{"b":[10,{"c":"x"}],"d":true}|[10,{"c":"x"}]|x|10|true|f|x`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A template is rendered from many goroutines at once (go test -race).
func TestRenderConcurrently(t *testing.T) {
	tpl, err := ParseTemplate("{{body.a}} {{headers}} {{query.q}}")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	for i := range 8 {
		go func() {
			done <- tpl.Render(Input{Body: `{"a":"x"}`, Headers: map[string]string{"H": "v"}, Query: "q=" + string(rune('0'+i))})
		}()
	}
	for range 8 {
		if got := <-done; !strings.HasPrefix(got, "x {\n  \"h\": \"v\"\n} ") {
			t.Errorf("got %q", got)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	tpl, err := ParseTemplate("PR {{body.pull_request.title}} by {{body.sender.login}}\n{{bodyJson}}\n{{headers}}")
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	sb.WriteString(`{"pull_request":{"title":"t"},"sender":{"login":"l"},"files":[`)
	for i := 0; sb.Len() < 250_000; i++ {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"name":"file.go","patch":"@@ -1 +1 @@ x"}`)
	}
	sb.WriteString("]}")
	in := Input{Body: sb.String(), Headers: map[string]string{"X-GitHub-Event": "pull_request"}, Secrets: []string{templateSecret}}
	b.ReportAllocs()
	for b.Loop() {
		tpl.Render(in)
	}
}

// prettyNested is what bodyJson renders for nested(depth, v): each array
// on its own lines, indented two spaces a level.
func prettyNested(depth int, v string) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat("  ", i) + "[\n")
	}
	b.WriteString(strings.Repeat("  ", depth) + v)
	for i := depth - 1; i >= 0; i-- {
		b.WriteString("\n" + strings.Repeat("  ", i) + "]")
	}
	return b.String()
}

// A body nested deeper than 64 levels renders bodyJson as the raw body and
// every body.<path> as missing; 64 levels still render. A value inside n
// arrays or objects is at depth n: the 1 of [[1]] is at depth 2.
func TestRenderDepthBound(t *testing.T) {
	objects := func(depth int) string {
		return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	}
	zeros := func(n int) string { return strings.TrimSuffix(strings.Repeat("0.", n), ".") }
	as := func(n int) string { return strings.TrimSuffix(strings.Repeat("a.", n), ".") }
	// Pretty-printed past the value limit, then too deep at the end.
	padding := `"pad":[` + strings.Repeat("0,", valueLimit(0)/4) + "0]"
	for _, c := range []struct {
		rule, src, body, want string
	}{
		{"depth 2 is [[1]]", "{{bodyJson}}|{{body.0.0}}", nested(2, "1"), "[\n  [\n    1\n  ]\n]|1"},
		{"arrays 64 deep render pretty", "{{bodyJson}}", nested(64, "1"), prettyNested(64, "1")},
		{"arrays 64 deep have their paths", "{{body." + zeros(64) + "}}|{{body." + zeros(63) + "}}", nested(64, "1"), "1|[1]"},
		{"arrays 65 deep render raw", "{{bodyJson}}", nested(65, "1"), nested(65, "1")},
		{"arrays 65 deep have no paths", "[{{body.0}}{{body." + zeros(65) + "}}{{json body." + zeros(64) + "}}]", nested(65, "1"), "[]"},
		{"objects 64 deep have their paths", "{{body." + as(64) + "}}", objects(64), "1"},
		{"objects 65 deep render raw, without paths", "{{bodyJson}}[{{body.a}}{{body." + as(65) + "}}]", objects(65), objects(65) + "[]"},
		{"a shallow member of a body too deep elsewhere is missing", `{{bodyJson}}[{{body.s}}]`, `{"s":"x","d":` + nested(64, "") + "}", `{"s":"x","d":` + nested(64, "") + "}[]"},
		{"too deep after the pretty-printing stopped", "[{{body.s}}]{{bodyJson}}", `{"s":"x",` + padding + `,"d":` + nested(64, "") + "}",
			"[]" + (`{"s":"x",` + padding)[:RenderMax-2]},
		{"64 deep after the pretty-printing stopped", "[{{body.s}}]{{bodyJson}}", `{"s":"x",` + padding + `,"d":` + nested(63, "") + "}",
			("[x]{\n  \"s\": \"x\",\n  \"pad\": [\n" + strings.Repeat("    0,\n", RenderMax/7))[:RenderMax]},
		{"deeper than the JSON decoder reads", "{{bodyJson}}[{{body.0}}]", nested(10001, ""), nested(10001, "") + "[]"},
		{"a form's payload 64 deep has its paths", "{{body." + zeros(64) + "}}", "payload=" + url.QueryEscape(nested(64, "1")), "1"},
		{"a form's payload 65 deep has none", "[{{body.0}}]", "payload=" + url.QueryEscape(nested(65, "1")), "[]"},
	} {
		if got := renderTemplate(t, c.src, Input{Body: c.body}); got != c.want {
			t.Errorf("%s: rendered\n%.300q…, want\n%.300q…", c.rule, got, c.want)
		}
	}
}
