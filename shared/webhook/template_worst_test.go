package webhook

import (
	"net/url"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cloud-agent/control-plane/shared/httpapi"
)

// filled is prefix, unit as many times as fit, and suffix, in at most size
// bytes.
func filled(prefix, unit, suffix string, size int) string {
	return prefix + strings.Repeat(unit, (size-len(prefix)-len(suffix))/len(unit)) + suffix
}

// nested is v inside depth arrays: nested(2, "1") is [[1]], at depth 2.
func nested(depth int, v string) string {
	return strings.Repeat("[", depth) + v + strings.Repeat("]", depth)
}

// worstBodies are the costliest bodies found for the renderer, each of the
// hook's size limit (httpapi.MaxBody): each is one of the ways a body
// makes work, at its most.
func worstBodies() []struct{ name, body string } {
	const size = httpapi.MaxBody
	deep := nested(9998, "")
	return []struct{ name, body string }{
		// The widest pretty-printing: the most lines, each indented 64
		// levels (126 bytes of indent for two bytes of body).
		{"depth=64", nested(63, filled("[", "0,", "0]", size-2*63))},
		// The same up to the end, where it nests a level too deep: the
		// body is read to its end, the pretty-printing thrown away.
		{"depth=65", filled("[", "0,", nested(64, "")+"]", size)},
		// As deep as the JSON decoder reads (10,000 levels), many times.
		{"depth=9999", "[" + strings.Repeat(deep+",", (size-2)/(len(deep)+1)-1) + deep + "]"},
		// A string of escaped lone surrogates: each is U+FFFD, and the
		// JSON decoder makes an error value for each.
		{"surrogates", filled(`{"a":"`, `\ud800`, `"}`, size)},
		// Many tiny members, each a name the template's body paths look up.
		{"members", filled("{", `"a":0,`, `"a":0}`, size)},
		// A form body whose payload member is the widest pretty-printing.
		{"form", "payload=" + url.QueryEscape(nested(63, filled("[", "0,", "0]", size/2-400)))},
	}
}

// worstTemplate names everything of the body many times: body paths that
// walk every level of the bodies above (each a lookup in every member),
// then bodyJson and the body, quoted and not.
func worstTemplate(tb testing.TB) *Template {
	var b strings.Builder
	b.WriteString("{{headers}}{{json headers}}")
	for i := range maxBodyDepth {
		b.WriteString("{{body.a" + strings.Repeat(".0", i) + ".x}}{{json body" + strings.Repeat(".0", i+1) + ".x}}")
	}
	b.WriteString("{{json body.a}}{{json bodyJson}}{{bodyJson}}{{json body}}{{body}}")
	tpl, err := ParseTemplate(b.String())
	if err != nil {
		tb.Fatal(err)
	}
	return tpl
}

// worstInput is a delivery of body with a secret to redact.
func worstInput(body string) Input {
	return Input{Body: body, Headers: map[string]string{"Content-Type": "application/json", "X-GitHub-Event": "push"}, Secrets: []string{templateSecret}}
}

// BenchmarkRenderWorst renders the worst bodies found at the size limit,
// each with a template that names all of the body many times: the
// contract's bound, well under a second, is kept at 50 ms.
func BenchmarkRenderWorst(b *testing.B) {
	tpl := worstTemplate(b)
	for _, c := range worstBodies() {
		b.Run(c.name, func(b *testing.B) {
			in := worstInput(c.body)
			b.ReportAllocs()
			for b.Loop() {
				tpl.Render(in)
			}
		})
	}
}

// Every worst body renders with bounded work, whatever the template names:
// its pretty-printing stops where no more can reach the output, a body
// too deep is read once to its end and no deeper, and the body is read at
// most once. Time is left to BenchmarkRenderWorst; the bound here is on
// the bytes a rendering allocates, at most 64 for each byte of the body.
func TestRenderWorstBodiesBounded(t *testing.T) {
	tpl := worstTemplate(t)
	for _, c := range worstBodies() {
		if len(c.body) > httpapi.MaxBody || len(c.body) < httpapi.MaxBody*9/10 {
			t.Errorf("%s: %d bytes, not the size limit", c.name, len(c.body))
		}
		in := worstInput(c.body)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out := tpl.Render(in)
		runtime.ReadMemStats(&after)
		if n := utf8.RuneCountInString(out); n != RenderMax {
			t.Errorf("%s: rendered %d code points, want the output full", c.name, n)
		}
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 64*uint64(len(c.body)) {
			t.Errorf("%s: rendering allocated %d bytes, %d for each byte of the body", c.name, allocated, allocated/uint64(len(c.body)))
		}
	}
}

// The body is read once per rendering, however many placeholders name it.
func TestRenderReadsBodyOnce(t *testing.T) {
	in := Input{Body: `{"a":"x","b":[1,2]}`}
	allocs := func(src string) float64 {
		tpl, err := ParseTemplate(src)
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(10, func() { tpl.Render(in) })
	}
	once := allocs("{{body.a}}{{bodyJson}}{{body.b.1}}")
	if many := allocs(strings.Repeat("{{body.a}}{{bodyJson}}{{body.b.1}}", 1000)); many > once+32 {
		t.Errorf("naming the body 1,000 times takes %v allocations, once %v", many, once)
	}
}
