package webhook

import (
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

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

// Redact is s with every occurrence of the secrets (each as redactionsOf
// forms it: the whole string, a whsec_ secret's key, percent-encoded or
// JSON-escaped) replaced by [redacted]: what a delivery records or logs
// beside its prompt (its event, its delivery, a refusal's detail) holds
// no secret, whatever header the trigger read it from.
func Redact(s string, secrets ...string) string {
	w := newRenderWriter(redactionsOf(secrets))
	w.write(s)
	return w.finish()
}
