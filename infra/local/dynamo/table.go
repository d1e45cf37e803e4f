package dynamo

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/google/btree"
)

// keyPart is one attribute of a key schema: its name and its type.
type keyPart struct {
	name string
	kind kind
}

// keySchema is a table's or an index's key: a hash attribute and an
// optional range attribute (range.name "" when none).
type keySchema struct {
	hash, rng keyPart
}

// names are the schema's attribute names.
func (ks keySchema) names() []string {
	if ks.rng.name == "" {
		return []string{ks.hash.name}
	}
	return []string{ks.hash.name, ks.rng.name}
}

// table is one table: its definition and its items, in a B-tree ordered
// as a scan reads them, and its indexes.
type table struct {
	name      string
	id        string // a random UUID, as DynamoDB's TableId
	created   time.Time
	key       keySchema
	attrs     []keyPart // the attribute definitions, in the order given
	billing   string
	indexes   []*index // global, then local, in the order given
	ttl       string   // the time to live attribute, "" while disabled
	items     *entryTree
	itemBytes int
	// stream is the table's stream while it is enabled (nil: none), and
	// latest the last it had, enabled or not.
	stream, latest *stream
}

// index is a secondary index: its definition and the entries of the items
// that have its key attributes (a sparse index leaves out the others).
type index struct {
	name       string
	local      bool
	key        keySchema
	projection string   // ALL, KEYS_ONLY or INCLUDE
	include    []string // INCLUDE's non-key attributes
	// projected are the attributes a KEYS_ONLY or INCLUDE index holds:
	// the table's keys, its own and the included ones, each once.
	projected []string
	entries   *entryTree
	bytes     int // the size of what it holds of its items
}

// entry is one item in a tree, under its key: the hash of its partition
// key first (a scan's order, and its segments), then the key's values (an
// index's key, then the table's).
type entry struct {
	hash uint64
	keys []value
	it   item
	// size is what a stored entry holds of its item: the item's size in
	// the table, its projection's in an index.
	size int
	// last makes a bound of a seek: the entry then sorts after every entry
	// whose keys begin with its own. (Without it, it sorts before them.)
	last bool
}

// lessEntry orders entries by hash, then by their keys' values.
func lessEntry(a, b *entry) bool {
	if a.hash != b.hash {
		return a.hash < b.hash
	}
	n := min(len(a.keys), len(b.keys))
	for i := range n {
		if c, _ := compare(a.keys[i], b.keys[i]); c != 0 {
			return c < 0
		}
	}
	switch {
	case len(a.keys) == len(b.keys):
		return !a.last && b.last
	case len(a.keys) == n: // a is a prefix of b
		return !a.last
	default:
		return b.last
	}
}

// entryTree is a B-tree of entries in lessEntry's order. It holds each
// entry beside its hash, so that a search compares the hashes in its
// nodes and reaches an entry only when they are equal (within a
// partition).
type entryTree struct{ t *btree.BTreeG[entryRef] }

// entryRef is an entry in an entryTree.
type entryRef struct {
	hash uint64
	e    *entry
}

func newTree() *entryTree {
	return &entryTree{btree.NewG(16, func(a, b entryRef) bool {
		if a.hash != b.hash {
			return a.hash < b.hash
		}
		return lessEntry(a.e, b.e)
	})}
}

// Len is the number of entries in the tree.
func (t *entryTree) Len() int { return t.t.Len() }

// Get is the entry that sorts as e does.
func (t *entryTree) Get(e *entry) (*entry, bool) {
	r, ok := t.t.Get(entryRef{e.hash, e})
	return r.e, ok
}

// ReplaceOrInsert stores e, in place of the entry that sorts as it does,
// which it returns.
func (t *entryTree) ReplaceOrInsert(e *entry) (*entry, bool) {
	r, ok := t.t.ReplaceOrInsert(entryRef{e.hash, e})
	return r.e, ok
}

// Delete removes the entry that sorts as e does, and returns it.
func (t *entryTree) Delete(e *entry) (*entry, bool) {
	r, ok := t.t.Delete(entryRef{e.hash, e})
	return r.e, ok
}

// Ascend visits every entry in order, until visit answers false.
func (t *entryTree) Ascend(visit func(*entry) bool) {
	t.t.Ascend(func(r entryRef) bool { return visit(r.e) })
}

// AscendGreaterOrEqual visits, in order, the entries from the first that
// does not sort before from, until visit answers false.
func (t *entryTree) AscendGreaterOrEqual(from *entry, visit func(*entry) bool) {
	t.t.AscendGreaterOrEqual(entryRef{from.hash, from}, func(r entryRef) bool { return visit(r.e) })
}

// DescendLessOrEqual visits, in reverse order, the entries from the last
// that does not sort after from, until visit answers false.
func (t *entryTree) DescendLessOrEqual(from *entry, visit func(*entry) bool) {
	t.t.DescendLessOrEqual(entryRef{from.hash, from}, func(r entryRef) bool { return visit(r.e) })
}

// hashKey spreads partition keys over the hash space: a scan reads them in
// this order, and segment n of a parallel scan is the n-th of equal ranges.
func hashKey(v value) uint64 {
	// FNV-1a, 64 bits (hash/fnv's New64a), of the kind's byte and then
	// the value's, without an allocation.
	const offset, prime = 14695981039346656037, 1099511628211
	h := (offset ^ uint64(v.kind)) * prime
	for i := range len(v.s) {
		h = (h ^ uint64(v.s[i])) * prime
	}
	return h
}

// segmentOf is the segment of total that hash falls in.
func segmentOf(hash uint64, total int) int {
	hi, _ := bits.Mul64(hash, uint64(total))
	return int(hi)
}

// segmentStart is the first hash of a segment.
func segmentStart(segment, total int) uint64 {
	if segment == 0 {
		return 0
	}
	q, r := bits.Div64(uint64(segment), 0, uint64(total))
	if r != 0 {
		q++
	}
	return q
}

// tableEntry is the entry of an item's table key (the item may be a key
// only, for a lookup), made in one allocation with its keys.
func (t *table) tableEntry(it item) *entry {
	b := new(struct {
		e    entry
		keys [2]value
	})
	b.e = entry{hash: hashKey(it[t.key.hash.name]), keys: t.appendKey(b.keys[:0], it), it: it}
	return &b.e
}

// appendKey appends the values of the table's key in it.
func (t *table) appendKey(keys []value, it item) []value {
	keys = append(keys, it[t.key.hash.name])
	if t.key.rng.name != "" {
		keys = append(keys, it[t.key.rng.name])
	}
	return keys
}

// indexEntry is the entry of an item in index x, made in one allocation
// with its keys; ok is false when the item lacks one of the index's key
// attributes, or has one of another type.
func (t *table) indexEntry(x *index, it item) (e *entry, ok bool) {
	h, ok := it[x.key.hash.name]
	if !ok || h.kind != x.key.hash.kind {
		return nil, false
	}
	b := new(struct {
		e    entry
		keys [4]value
	})
	keys := append(b.keys[:0], h)
	if x.key.rng.name != "" {
		r, ok := it[x.key.rng.name]
		if !ok || r.kind != x.key.rng.kind {
			return nil, false
		}
		keys = append(keys, r)
	}
	b.e = entry{hash: hashKey(h), keys: t.appendKey(keys, it), it: it}
	return &b.e, true
}

// sameKey reports whether a and b, keys of the table, are one key.
func (t *table) sameKey(a, b item) bool {
	return equal(a[t.key.hash.name], b[t.key.hash.name]) && (t.key.rng.name == "" || equal(a[t.key.rng.name], b[t.key.rng.name]))
}

// get is the stored item of a key, nil when there is none.
func (t *table) get(key item) item {
	if e, ok := t.items.Get(t.tableEntry(key)); ok {
		return e.it
	}
	return nil
}

// put stores it (which has the table's key), in place of the item of that
// key, which it returns (nil: none), and keeps the indexes with it: an
// index entry whose key did not change is replaced, not deleted first.
func (t *table) put(it item) item {
	e := t.tableEntry(it)
	e.size = it.size()
	old, replaced := t.items.ReplaceOrInsert(e)
	t.itemBytes += e.size
	var was item
	if replaced {
		t.itemBytes -= old.size
		was = old.it
	}
	for _, x := range t.indexes {
		ie, ok := t.indexEntry(x, it)
		if ok {
			ie.size = t.projectedSize(x, it, e.size)
			if prev, had := x.entries.ReplaceOrInsert(ie); had {
				x.bytes -= prev.size
			}
			x.bytes += ie.size
		}
		if !replaced {
			continue
		}
		if oe, had := t.indexEntry(x, old.it); had && (!ok || lessEntry(oe, ie) || lessEntry(ie, oe)) {
			t.unindexEntry(x, oe)
		}
	}
	return was
}

// remove deletes the item of key, if any, and returns it.
func (t *table) remove(key item) item {
	old, ok := t.items.Delete(t.tableEntry(key))
	if !ok {
		return nil
	}
	t.itemBytes -= old.size
	for _, x := range t.indexes {
		if ie, ok := t.indexEntry(x, old.it); ok {
			t.unindexEntry(x, ie)
		}
	}
	return old.it
}

// unindexEntry deletes an entry from index x.
func (t *table) unindexEntry(x *index, e *entry) {
	if prev, ok := x.entries.Delete(e); ok {
		x.bytes -= prev.size
	}
}

// write applies a change: it stored, or the item of key deleted when it
// is nil; the table's stream, if any, records it.
func (t *table) write(key, it item) {
	var old item
	if it == nil {
		old = t.remove(key)
	} else {
		old = t.put(it)
	}
	if t.stream != nil {
		t.stream.change(old, it, false)
	}
}

// indexNamed is the index of that name, nil when the table has none.
func (t *table) indexNamed(name string) *index {
	for _, x := range t.indexes {
		if x.name == name {
			return x
		}
	}
	return nil
}

// project is what index x holds of an item: everything (ALL), or its keys,
// the table's keys and the included attributes.
func (t *table) project(x *index, it item) item {
	if x == nil || x.projection == "ALL" {
		return it
	}
	out := item{}
	for _, n := range x.projected {
		if v, ok := it[n]; ok {
			out[n] = v
		}
	}
	return out
}

// projectedSize is the size of what index x holds of an item of size
// whole.
func (t *table) projectedSize(x *index, it item, whole int) int {
	if x.projection == "ALL" {
		return whole
	}
	n := 0
	for _, name := range x.projected {
		if v, ok := it[name]; ok {
			n += len(name) + v.size()
		}
	}
	return n
}

// expiry is the span of times to live that have passed at a moment:
// epoch seconds before it, and not more than five years before (DynamoDB
// does not act on older ones), as canonical numbers.
type expiry struct{ now, oldest string }

func expiryAt(now time.Time) expiry {
	return expiry{strconv.FormatInt(now.Unix(), 10), strconv.FormatInt(now.AddDate(-5, 0, 0).Unix(), 10)}
}

// expired reports whether the item's time to live has passed: its TTL
// attribute is a number in the span (an item without one, or with another
// type, never expires).
func (t *table) expired(it item, x expiry) bool {
	v, ok := it[t.ttl]
	if t.ttl == "" || !ok || v.kind != kindN {
		return false
	}
	return compareNumbers(v.s, x.now) < 0 && compareNumbers(v.s, x.oldest) > 0
}
