package dynamo

import (
	"slices"
	"sync"
)

// parses keeps the trees of the expressions parsed last: clients send the
// same few expressions again and again, with the same names and values
// of the same types (the values themselves change), and a tree is never
// changed once parsed.
var parses = &parseCache{byExpr: map[parseKey]*cachedParse{}}

// parseCacheSize is how many expressions a parseCache keeps.
const parseCacheSize = 1024

// parseCache is a bounded cache of parses: it forgets everything when
// full.
type parseCache struct {
	mu     sync.Mutex
	byExpr map[parseKey]*cachedParse
}

// parseKey names an expression: its text and the grammar it was read in.
type parseKey struct {
	grammar grammar
	expr    string
}

// cachedParse is one expression's tree (a *condition, an *update or a
// *projection) and what it depends on besides the text: the names it
// was given for its placeholders, and the types of the values, or the
// values whole where the parse read them. A parse is a function of these
// alone, so that another request that gives the same is answered with the
// same tree.
type cachedParse struct {
	tree   any
	names  []nameUse
	values []valueUse
}

// nameUse is an expression attribute name a parse used, and what it
// stood for.
type nameUse struct{ ref, name string }

// valueUse is an expression attribute value a parse used: its type, and
// the value when the parse read it whole.
type valueUse struct {
	ref   string
	kind  kind
	whole bool
	v     value
}

// parseOnce is what parse answers for expr in grammar g with the names
// and values of c: from the cache when it holds a parse of the same
// expression that fits c, whose references it then marks used in c.
// Only an expression that parses is kept: a refused one is parsed again
// each time, for its message.
func parseOnce[T any](g grammar, expr string, c *exprContext, parse func() (T, error)) (T, error) {
	key := parseKey{g, expr}
	parses.mu.Lock()
	p := parses.byExpr[key]
	parses.mu.Unlock()
	if p != nil && p.fits(c) {
		for _, n := range p.names {
			c.usedNames = appendOnce(c.usedNames, n.ref)
		}
		for _, v := range p.values {
			c.usedValues = appendOnce(c.usedValues, v.ref)
		}
		return p.tree.(T), nil
	}
	// The parse's own references, apart from those the request's other
	// expressions used before it.
	usedNames, usedValues := c.usedNames, c.usedValues
	c.usedNames, c.usedValues, c.wholeValues = nil, nil, nil
	tree, err := parse()
	p = &cachedParse{tree: tree}
	for _, ref := range c.usedNames {
		p.names = append(p.names, nameUse{ref, c.names[ref]})
		usedNames = appendOnce(usedNames, ref)
	}
	for _, ref := range c.usedValues {
		u := valueUse{ref: ref, kind: c.values[ref].kind, whole: slices.Contains(c.wholeValues, ref)}
		if u.whole {
			u.v = c.values[ref]
		}
		p.values = append(p.values, u)
		usedValues = appendOnce(usedValues, ref)
	}
	c.usedNames, c.usedValues, c.wholeValues = usedNames, usedValues, nil
	if err != nil {
		return tree, err
	}
	parses.mu.Lock()
	if len(parses.byExpr) >= parseCacheSize {
		clear(parses.byExpr)
	}
	parses.byExpr[key] = p
	parses.mu.Unlock()
	return tree, nil
}

// fits reports whether c gives the parse's references what they stood
// for: the same names, values of the same types, and the same values
// where the parse read them whole.
func (p *cachedParse) fits(c *exprContext) bool {
	for _, n := range p.names {
		if name, ok := c.names[n.ref]; !ok || name != n.name {
			return false
		}
	}
	for _, u := range p.values {
		if v, ok := c.values[u.ref]; !ok || v.kind != u.kind || u.whole && !equal(v, u.v) {
			return false
		}
	}
	return true
}
