package webhook

import (
	"encoding/json/jsontext"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// redactAllRef is the plain definition the writer's redaction across pieces
// must agree with: the whole output scanned from the left, the longest
// redaction where several begin.
func redactAllRef(s string, needles []string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		size := 0
		for _, nd := range needles {
			if len(nd) > size && strings.HasPrefix(s[i:], nd) {
				size = len(nd)
			}
		}
		if size > 0 {
			b.WriteString(redactedText)
			i += size
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// bodyJSONRef is bodyJson by its definition: the body as text, pretty-printed
// as jsontext.Value.Indent writes it when it is one JSON value nested at
// most maxBodyDepth deep, else as it is; deep tells a JSON body nested
// deeper.
func bodyJSONRef(body string) (pretty string, deep bool) {
	body = strings.ToValidUTF8(body, "\uFFFD")
	opts := []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
	d, most := jsontext.NewDecoder(strings.NewReader(body), opts...), 0
	for most <= maxBodyDepth {
		if _, err := d.ReadToken(); err != nil {
			break
		}
		most = max(most, d.StackDepth())
	}
	if most > maxBodyDepth {
		return body, jsontext.Value(body).IsValid(opts...)
	}
	v := jsontext.Value(body)
	if err := v.Indent(append(opts, jsontext.WithIndent("  "), jsontext.PreserveRawStrings(false))...); err != nil {
		return body, false
	}
	return string(v), false
}

// FuzzTemplate: parsing any template and rendering any input never panics;
// the output is valid UTF-8 of at most RenderMax code points, is the
// unredacted output with every secret replaced, and holds no secret.
// bodyJson renders as bodyJSONRef, and a JSON body nested too deep has no
// body.<path>.
func FuzzTemplate(f *testing.F) {
	f.Add("Body: {{body}}", `{"event": "test"}`, "content-type", "application/json", "foo=bar", "")
	f.Add("{{bodyJson}} {{ json headers }}", `{"a":[1,{"b":"c"}]}`, "X-Many", "a,b", "", "whsec_abcdefghij")
	f.Add("{{body.a.1.b}}{{json body.a}}{{body.0}}", `{"a":[1,{"b":"c"}],"a":{"1":2}}`, "Authorization", "Bearer x", "a=1", "")
	f.Add("{{body.action}}", "payload=%7B%22action%22%3A%22opened%22%7D", "X-Hub-Signature-256", "sha256=00", "", "")
	f.Add("{{headers.x-a}} {{query.q}} {{{{ {{ json query }}", "", "x-A", "v\xff", "q=%ff&q=1", "\xff")
	f.Add("x{{body}}y{{body}}", "whsec_abc/de+f=", "h", "whsec_", "s=whsec_abc%2Fde%2Bf%3D", "whsec_abc/de+f=")
	f.Add("{{ body", "{", "", "", "", "")
	f.Add("{{{body}}}", `[[[[[[[]]]]]]]`, "", "", "", "aa")
	f.Add("{{bodyJson}}{{body.0.0.0}}", nested(64, "1"), "", "", "", "")
	f.Add("{{json bodyJson}}{{body.0}}", nested(65, "1"), "", "", "", "1")
	f.Add("{{body.a.a}}", strings.Repeat(`{"a":`, 65)+"1"+strings.Repeat("}", 65), "", "", "", "")
	f.Add("{{body.0}}", `{"s":"x","d":`+nested(64, "")+`} trailing`, "", "", "", "")
	f.Add("{{body.0.0}}", "payload="+url.QueryEscape(nested(65, "1")), "", "", "", "")
	f.Add("{{bodyJson}}", nested(10001, ""), "", "", "", "")
	pretty, err := ParseTemplate("{{bodyJson}}")
	if err != nil {
		f.Fatal(err)
	}
	paths, err := ParseTemplate("{{body.0}}{{body.a}}{{body.0.0}}{{body.a.a}}")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src, body, hname, hvalue, query, secret string) {
		want, deep := bodyJSONRef(body)
		if r := []rune(want); len(r) > RenderMax {
			want = string(r[:RenderMax])
		}
		if got := pretty.Render(Input{Body: body}); got != want {
			t.Fatalf("bodyJson of %q renders\n%q, want\n%q", body, got, want)
		}
		if got := paths.Render(Input{Body: body}); deep && got != "" {
			t.Fatalf("%q nests too deep, yet its paths render %q", body, got)
		}
		tpl, err := ParseTemplate(src)
		if err != nil {
			return
		}
		in := Input{Body: body, Headers: map[string]string{hname: hvalue, "X-Fixed": secret}, Query: query, Method: "POST", Path: "/p", Event: hname}
		plain := tpl.Render(in)
		in.Secrets = []string{secret}
		got := tpl.Render(in)
		for _, out := range []string{plain, got} {
			if !utf8.ValidString(out) {
				t.Fatalf("%q renders invalid UTF-8: %q", src, out)
			}
			if n := utf8.RuneCountInString(out); n > RenderMax {
				t.Fatalf("%q renders %d code points", src, n)
			}
		}
		if utf8.RuneCountInString(plain) < RenderMax {
			// [redacted] may be longer than a short secret: cut it too.
			want := redactAllRef(plain, redactionsOf(validInput(in).Secrets))
			if r := []rune(want); len(r) > RenderMax {
				want = string(r[:RenderMax])
			}
			if got != want {
				t.Fatalf("%q with secret %q renders\n%q, want\n%q", src, secret, got, want)
			}
		}
		// A secret of 9 or more characters without brackets cannot be made
		// of [redacted] and what is around it.
		if utf8.ValidString(secret) && len(secret) >= 9 && !strings.ContainsAny(secret, "[]") && strings.Contains(got, secret) {
			t.Fatalf("%q renders the secret %q: %q", src, secret, got)
		}
	})
}
