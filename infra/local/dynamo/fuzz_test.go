package dynamo

import (
	"bytes"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"flag"
	"fmt"
	"hash/crc32"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzEndpoint sends any operation and body to the endpoint, against an
// empty DB or one that holds the project's table (setup picks which, see
// fzDB). Nothing may panic or hang, and every answer must be one of
// DynamoDB's: HTTP 200 with a JSON object, or HTTP 4xx with a JSON object
// naming its __type and its message (an InternalServerError, HTTP 500, is
// a case the engine does not handle); Content-Type
// application/x-amz-json-1.0 and X-Amz-Crc32 the body's CRC32 either way.
// A refusal, or a read, must leave the tables as they were. After a write
// that succeeded, the items its answer holds must be valid DynamoDB JSON,
// and the DB must still be whole (fzInvariants): its trees, sizes and
// indexes agree with its items, every stored item is one DynamoDB would
// store, and a Scan of each table answers items that GetItem reads back
// the same. Where the time to live is on, a sweep must leave it whole too.
func FuzzEndpoint(f *testing.F) {
	for _, s := range fzSeeds() {
		f.Add(s.setup, s.op, []byte(s.body))
	}
	// Every setup's DB is built before the inputs run, so that an input
	// covers the same code each time it runs: the fuzzer keeps, and
	// minimizes, only inputs that cover something new.
	for setup := range uint8(fzTable | fzTTL | fzOther + 1) {
		fzDB(f, setup)
	}
	fzMinimizeFor(5 * time.Second)
	f.Fuzz(fzRun)
}

// fzMinimizeFor caps the time the fuzzer spends minimizing an input, unless
// -fuzzminimizetime is given. An input here costs about a millisecond, and
// minimizing a body of a few hundred bytes tries a candidate for each of
// its spans: the default minute would hold a worker through a 60-second
// run for each input that covers something new.
func fzMinimizeFor(d time.Duration) {
	given := false
	flag.Visit(func(fl *flag.Flag) { given = given || fl.Name == "test.fuzzminimizetime" })
	if fl := flag.Lookup("test.fuzzminimizetime"); fl != nil && !given {
		_ = fl.Value.Set(d.String())
	}
}

// fzRun is one input of FuzzEndpoint: a request, or a few in a row
// (bodies separated by a NUL byte, which no JSON holds, their operations
// by commas, the last operation for the bodies past the others).
func fzRun(t *testing.T, setup uint8, ops string, body []byte) {
	t.Helper()
	db, before := fzDB(t, setup)
	names := strings.Split(ops, ",")
	for i, body := range bytes.SplitN(body, []byte{0}, fzMaxRequests) {
		op := names[min(i, len(names)-1)]
		status, out := fzServe(t, db, op, body, 10*time.Second)
		switch {
		case status != http.StatusOK || fzReads[op]:
			// A refusal, or a read, changes nothing.
			if after := fzDump(db); after != before {
				t.Fatalf("%s %s: HTTP %d changed the tables:\n%.2000s\nto\n%.2000s", op, strconv.QuoteToASCII(fzCut(string(body))), status, before, after)
			}
		default:
			fzCheckItems(t, op, body, out)
			fzInvariants(t, db)
			before = fzDump(db)
		}
	}
	if setup&fzTTL != 0 {
		db.Sweep()
		fzTablesProblem(t, db)
	}
}

// fzMaxRequests is the most requests one input sends.
const fzMaxRequests = 6

// fzReads are the operations that change nothing.
var fzReads = map[string]bool{"DescribeTable": true, "ListTables": true, "DescribeTimeToLive": true, "GetItem": true,
	"Query": true, "Scan": true, "BatchGetItem": true, "TransactGetItems": true}

// The bits of a fuzz input's setup.
const (
	fzTable = 1 << iota // the project's table, Triggers, with fzItems
	fzTTL               // its time to live enabled on expiresAt
	fzOther             // the table Other too, with fzOtherItems
)

// fzNow is the fuzzed DB's clock: fixed, so that a failing input fails
// again.
var fzNow = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// fzCreateTable is the project's table: string keys PK and SK, the
// indexes TriggersByUser and DueTriggersAll.
const fzCreateTable = `{"TableName":"Triggers","BillingMode":"PAY_PER_REQUEST",
	"AttributeDefinitions":[
		{"AttributeName":"PK","AttributeType":"S"},{"AttributeName":"SK","AttributeType":"S"},
		{"AttributeName":"ownerUserId","AttributeType":"S"},{"AttributeName":"listedAt","AttributeType":"S"},
		{"AttributeName":"dueShard","AttributeType":"S"},{"AttributeName":"nextRunAt","AttributeType":"S"}],
	"KeySchema":[{"AttributeName":"PK","KeyType":"HASH"},{"AttributeName":"SK","KeyType":"RANGE"}],
	"GlobalSecondaryIndexes":[
		{"IndexName":"TriggersByUser","Projection":{"ProjectionType":"ALL"},
		 "KeySchema":[{"AttributeName":"ownerUserId","KeyType":"HASH"},{"AttributeName":"listedAt","KeyType":"RANGE"}]},
		{"IndexName":"DueTriggersAll","Projection":{"ProjectionType":"ALL"},
		 "KeySchema":[{"AttributeName":"dueShard","KeyType":"HASH"},{"AttributeName":"nextRunAt","KeyType":"RANGE"}]}]}`

// fzItems are the project's table's items: a profile with a value of
// every type, nested; triggers in one index, both or none; an expired
// session with empty values.
var fzItems = []string{
	`{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"},"name":{"S":"Ann"},"age":{"N":"42"},
	  "tags":{"SS":["a","b"]},"scores":{"NS":["1","2.5","-3"]},"bdata":{"B":"AQID"},"bset":{"BS":["AQ==","Ag=="]},
	  "flag":{"BOOL":true},"nothing":{"NULL":true},
	  "prefs":{"M":{"theme":{"S":"dark"},"nested":{"M":{"deep":{"L":[{"N":"1"},{"S":"x"},{"M":{}}]}}}}},
	  "history":{"L":[{"S":"h0"},{"N":"7"},{"L":[{"BOOL":false}]}]}}`,
	`{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"},"ownerUserId":{"S":"u1"},"listedAt":{"S":"2025-05-01T00:00:00Z"},
	  "dueShard":{"S":"3"},"nextRunAt":{"S":"2025-06-01T00:00:00Z"},"expiresAt":{"N":"1748735000"},"runs":{"N":"0"}}`,
	`{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t2"},"ownerUserId":{"S":"u2"},"listedAt":{"S":"2025-05-02T00:00:00Z"},
	  "dueShard":{"S":"3"},"nextRunAt":{"S":"2025-06-02T00:00:00Z"},"expiresAt":{"N":"1748739600"}}`,
	`{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t3"},"ownerUserId":{"S":"u2"},"listedAt":{"S":"2025-05-03T00:00:00Z"},
	  "count":{"N":"0"},"big":{"N":"9.9999999999999999999999999999999999999E+125"},"small":{"N":"1E-130"},"neg":{"N":"-0.5"}}`,
	`{"PK":{"S":"SESSION#s1"},"SK":{"S":"META"},"expiresAt":{"N":"1748735990"},
	  "emptyS":{"S":""},"emptyB":{"B":""},"emptyL":{"L":[]},"emptyM":{"M":{}},"ss":{"SS":["x"]}}`,
}

// fzCreateOther is a table of other key types: a number partition key, a
// binary sort key, a local index on a number and a global one that
// includes an attribute.
const fzCreateOther = `{"TableName":"Other","BillingMode":"PROVISIONED",
	"ProvisionedThroughput":{"ReadCapacityUnits":5,"WriteCapacityUnits":5},
	"AttributeDefinitions":[
		{"AttributeName":"id","AttributeType":"N"},{"AttributeName":"bin","AttributeType":"B"},
		{"AttributeName":"num","AttributeType":"N"},{"AttributeName":"tag","AttributeType":"S"}],
	"KeySchema":[{"AttributeName":"id","KeyType":"HASH"},{"AttributeName":"bin","KeyType":"RANGE"}],
	"LocalSecondaryIndexes":[{"IndexName":"ByNum","Projection":{"ProjectionType":"KEYS_ONLY"},
		"KeySchema":[{"AttributeName":"id","KeyType":"HASH"},{"AttributeName":"num","KeyType":"RANGE"}]}],
	"GlobalSecondaryIndexes":[{"IndexName":"ByTag","Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["color"]},
		"ProvisionedThroughput":{"ReadCapacityUnits":5,"WriteCapacityUnits":5},
		"KeySchema":[{"AttributeName":"tag","KeyType":"HASH"}]}]}`

var fzOtherItems = []string{
	`{"id":{"N":"1"},"bin":{"B":"AQI="},"num":{"N":"5"},"tag":{"S":"red"},"color":{"S":"r"},"size":{"N":"3"}}`,
	`{"id":{"N":"1"},"bin":{"B":"AA=="},"num":{"N":"-1"}}`,
	`{"id":{"N":"2.5"},"bin":{"B":"/w=="},"tag":{"S":"blue"},"m":{"M":{"k":{"NS":["1","2"]}}}}`,
}

// fzDB is a DB on fzNow with what setup asks for: a copy of the one
// built for it once (its trees are cloned, copy on write), so that each
// input costs little more than its own request.
func fzDB(t testing.TB, setup uint8) (*DB, string) {
	t.Helper()
	setup &= fzTable | fzTTL | fzOther
	fzMu.Lock()
	defer fzMu.Unlock()
	tmpl, ok := fzTemplates[setup]
	if !ok {
		db := fzBuild(t, setup)
		fzInvariants(t, db)
		tmpl = fzTemplate{db, fzDump(db)}
		fzTemplates[setup] = tmpl
	}
	db := New()
	db.now = tmpl.db.now
	for name, tb := range tmpl.db.tables {
		c := *tb
		c.items = tb.items.clone()
		c.indexes = make([]*index, len(tb.indexes))
		for i, x := range tb.indexes {
			cx := *x
			cx.entries = x.entries.clone()
			c.indexes[i] = &cx
		}
		db.tables[name] = &c
	}
	return db, tmpl.dump
}

// clone is a copy of the tree that shares its entries (copied lazily, as
// btree's Clone does).
func (t *entryTree) clone() *entryTree { return &entryTree{t.t.Clone()} }

// fzTemplate is a setup's DB, and its dump.
type fzTemplate struct {
	db   *DB
	dump string
}

var (
	fzMu        sync.Mutex
	fzTemplates = map[uint8]fzTemplate{}
)

// fzDump is everything the DB's tables hold, to compare: their names,
// time to live, sizes, items and the entries of their indexes.
func fzDump(db *DB) string {
	db.mu.RLock()
	defer db.mu.RUnlock()
	var b []byte
	for _, name := range slices.Sorted(maps.Keys(db.tables)) {
		tb := db.tables[name]
		b = fmt.Appendf(b, "%s ttl=%q bytes=%d\n", name, tb.ttl, tb.itemBytes)
		tb.items.Ascend(func(e *entry) bool {
			b = append(appendItem(b, e.it), '\n')
			return true
		})
		for _, x := range tb.indexes {
			b = fmt.Appendf(b, " %s: %d entries, %d bytes\n", x.name, x.entries.Len(), x.bytes)
		}
	}
	return string(b)
}

// fzBuild builds the DB of setup through the endpoint.
func fzBuild(t testing.TB, setup uint8) *DB {
	t.Helper()
	db := New()
	db.now = func() time.Time { return fzNow }
	must := func(op, body string) {
		t.Helper()
		if status, out := fzServe(t, db, op, []byte(body), time.Minute); status != http.StatusOK {
			t.Fatalf("setup %s: HTTP %d %v", op, status, out)
		}
	}
	if setup&fzTable != 0 {
		must("CreateTable", fzCreateTable)
		if setup&fzTTL != 0 {
			must("UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":true}}`)
		}
		for _, it := range fzItems {
			must("PutItem", `{"TableName":"Triggers","Item":`+it+`}`)
		}
	}
	if setup&fzOther != 0 {
		must("CreateTable", fzCreateOther)
		for _, it := range fzOtherItems {
			must("PutItem", `{"TableName":"Other","Item":`+it+`}`)
		}
	}
	return db
}

// fzServe sends one request and checks that its answer is well-formed; it
// returns the status and the body's members.
func fzServe(t testing.TB, db *DB, op string, body []byte, limit time.Duration) (int, map[string]jsontext.Value) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	r.Header.Set("Content-Type", "application/x-amz-json-1.0")
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.ServeHTTP(w, r)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s %.300q: no answer within %v", op, body, limit)
	}
	got := w.Body.Bytes()
	where := func() string { return op + " " + strconv.QuoteToASCII(fzCut(string(body))) }
	if ct := w.Header().Get("Content-Type"); ct != "application/x-amz-json-1.0" {
		t.Fatalf("%s: Content-Type %q", where(), ct)
	}
	if crc := w.Header().Get("X-Amz-Crc32"); crc != strconv.FormatUint(uint64(crc32.ChecksumIEEE(got)), 10) {
		t.Fatalf("%s: X-Amz-Crc32 %q is not the body's CRC32", where(), crc)
	}
	if n := w.Header().Get("Content-Length"); n != strconv.Itoa(len(got)) {
		t.Fatalf("%s: Content-Length %q of a body of %d bytes", where(), n, len(got))
	}
	var out map[string]jsontext.Value
	if err := json.Unmarshal(got, &out); err != nil || out == nil {
		t.Fatalf("%s: HTTP %d, the body is not a JSON object (%v): %.300s", where(), w.Code, err, got)
	}
	switch {
	case w.Code == http.StatusOK:
		if _, ok := out["__type"]; ok {
			t.Fatalf("%s: HTTP 200 with a __type: %.300s", where(), got)
		}
	case w.Code >= 400 && w.Code < 500:
		var e struct {
			Type    string `json:"__type"`
			Message *string
			Lower   *string `json:"message"`
		}
		if err := json.Unmarshal(got, &e); err != nil || !strings.Contains(e.Type, "#") || (e.Message == nil) == (e.Lower == nil) {
			t.Fatalf("%s: HTTP %d is not an error answer of DynamoDB's: %.300s", where(), w.Code, got)
		}
		if strings.HasSuffix(e.Type, "#InternalServerError") {
			t.Fatalf("%s: HTTP %d InternalServerError: %.300s", where(), w.Code, got)
		}
		if item, ok := out["Item"]; ok {
			fzCheckItem(t, where(), item)
		}
		var reasons struct {
			CancellationReasons []struct{ Item jsontext.Value }
		}
		if err := json.Unmarshal(got, &reasons); err != nil {
			t.Fatalf("%s: CancellationReasons %v: %.300s", where(), err, got)
		}
		for _, r := range reasons.CancellationReasons {
			if r.Item != nil {
				fzCheckItem(t, where(), r.Item)
			}
		}
	default:
		t.Fatalf("%s: HTTP %d: %.300s", where(), w.Code, got)
	}
	return w.Code, out
}

// fzCut is a request body short enough for a message.
func fzCut(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// fzCheckItems checks the items a successful answer holds: each must be
// DynamoDB JSON that the endpoint would read back.
func fzCheckItems(t testing.TB, op string, body []byte, out map[string]jsontext.Value) {
	t.Helper()
	where := op + " " + strconv.QuoteToASCII(fzCut(string(body)))
	for _, name := range []string{"Item", "Attributes", "LastEvaluatedKey"} {
		if v, ok := out[name]; ok {
			fzCheckItem(t, where, v)
		}
	}
	if v, ok := out["Items"]; ok {
		var items []jsontext.Value
		if err := json.Unmarshal(v, &items); err != nil {
			t.Fatalf("%s: Items %v", where, err)
		}
		for _, it := range items {
			fzCheckItem(t, where, it)
		}
	}
	if v, ok := out["Responses"]; ok {
		var byTable map[string][]jsontext.Value
		var list []struct{ Item jsontext.Value }
		switch {
		case json.Unmarshal(v, &byTable) == nil:
			for _, items := range byTable {
				for _, it := range items {
					fzCheckItem(t, where, it)
				}
			}
		case json.Unmarshal(v, &list) == nil:
			for _, r := range list {
				if r.Item != nil {
					fzCheckItem(t, where, r.Item)
				}
			}
		default:
			t.Fatalf("%s: Responses %.300s", where, v)
		}
	}
}

// fzCheckItem checks one item of an answer: the endpoint reads it back as
// an item, and its values are well-formed.
func fzCheckItem(t testing.TB, where string, raw jsontext.Value) {
	t.Helper()
	var it item
	if err := decodeJSON(raw, &it); err != nil || it == nil {
		t.Fatalf("%s: an answer's item %.300s is not DynamoDB JSON: %v", where, raw, err)
	}
	for n, v := range it {
		if msg := fzValueProblem(v); msg != "" {
			t.Fatalf("%s: an answer's attribute %q %s", where, n, msg)
		}
	}
}

// fzValueProblem says what is wrong with a value, "" when nothing is.
func fzValueProblem(v value) string {
	switch v.kind {
	case kindS, kindB, kindBOOL:
	case kindN:
		if c, err := parseNumber(v.s); err != nil || c != v.s {
			return "is the number " + strconv.Quote(v.s) + ", not in canonical form"
		}
	case kindNULL:
		if !v.b {
			return "is a NULL that is not true"
		}
	case kindM:
		for n, e := range v.attrs() {
			if msg := fzValueProblem(e); msg != "" {
				return "holds " + strconv.Quote(n) + " that " + msg
			}
		}
	case kindL:
		for _, e := range v.list() {
			if msg := fzValueProblem(e); msg != "" {
				return "holds an element that " + msg
			}
		}
	case kindSS, kindNS, kindBS:
		if len(v.elems()) == 0 {
			return "is an empty set"
		}
		seen := map[string]bool{}
		for _, e := range v.elems() {
			if seen[e] {
				return "is a set with duplicates"
			}
			seen[e] = true
			if c, err := parseNumber(e); v.kind == kindNS && (err != nil || c != e) {
				return "is a number set holding " + strconv.Quote(e) + ", not in canonical form"
			}
		}
	default:
		return "has no type (" + v.kind.String() + ")"
	}
	return ""
}

// fzInvariants checks that the DB is whole: each table's trees hold its
// items in order under their keys, its size is theirs, each index holds
// exactly the items that have its key, each item is one the table would
// store; and, over HTTP, a Scan of each table answers, and GetItem reads
// every item it answers back the same.
func fzInvariants(t testing.TB, db *DB) {
	t.Helper()
	for _, name := range fzTablesProblem(t, db) {
		db.mu.RLock()
		tb := db.tables[name]
		db.mu.RUnlock()
		scan := `{"TableName":` + string(appendString(nil, name)) + `}`
		status, out := fzServe(t, db, "Scan", []byte(scan), time.Minute)
		if status != http.StatusOK {
			t.Fatalf("Scan of %s after the input: HTTP %d %v", name, status, out)
		}
		var items []map[string]jsontext.Value
		if err := json.Unmarshal(out["Items"], &items); err != nil {
			t.Fatalf("Scan of %s: Items %v", name, err)
		}
		for _, it := range items {
			key := []byte(`{`)
			for i, n := range tb.key.names() {
				if i > 0 {
					key = append(key, ',')
				}
				key = append(appendString(key, n), ':')
				key = append(key, it[n]...)
			}
			key = append(key, '}')
			get := `{"TableName":` + string(appendString(nil, name)) + `,"Key":` + string(key) + `}`
			status, got := fzServe(t, db, "GetItem", []byte(get), time.Minute)
			want, _ := json.Marshal(it, json.Deterministic(true))
			var back map[string]jsontext.Value
			_ = json.Unmarshal(got["Item"], &back)
			again, _ := json.Marshal(back, json.Deterministic(true))
			if status != http.StatusOK || !bytes.Equal(want, again) {
				t.Fatalf("GetItem %s after a Scan answered %s: HTTP %d %s", get, want, status, again)
			}
		}
	}
}

// fzTablesProblem fails t when a table's trees are not whole (see
// fzTableProblem), and returns the tables' names in order.
func fzTablesProblem(t testing.TB, db *DB) []string {
	t.Helper()
	db.mu.RLock()
	defer db.mu.RUnlock()
	names := slices.Sorted(maps.Keys(db.tables))
	for _, name := range names {
		if msg := fzTableProblem(db.tables[name]); msg != "" {
			t.Fatalf("table %s: %s", name, msg)
		}
	}
	return names
}

// fzTableProblem says what is wrong with a table's trees, "" when
// nothing is: an item out of order or under another key, one DynamoDB
// would not store, a size that is not its items', an index that lacks an
// item with its key, holds another, or counts another size.
func fzTableProblem(tb *table) string {
	var msg string
	var prev *entry
	size := 0
	counts := make([]int, len(tb.indexes))
	sizes := make([]int, len(tb.indexes))
	tb.items.Ascend(func(e *entry) bool {
		if prev != nil && !lessEntry(prev, e) {
			msg = "its items are out of order"
			return false
		}
		prev = e
		want := tb.tableEntry(e.it)
		if e.hash != want.hash || !slices.EqualFunc(e.keys, want.keys, equal) {
			msg = "an item is under another key: " + string(appendItem(nil, e.it))
			return false
		}
		if err := tb.checkItem(e.it, false); err != nil {
			msg = "it holds an item DynamoDB would not store (" + err.Error() + "): " + string(appendItem(nil, e.it))
			return false
		}
		for n, v := range e.it {
			if p := fzValueProblem(v); p != "" {
				msg = "the attribute " + strconv.Quote(n) + " " + p
				return false
			}
		}
		size += e.it.size()
		for i, x := range tb.indexes {
			ie, ok := tb.indexEntry(x, e.it)
			if !ok {
				continue
			}
			counts[i]++
			sizes[i] += tb.project(x, e.it).size()
			got, found := x.entries.Get(ie)
			if !found || !bytes.Equal(appendItem(nil, got.it), appendItem(nil, e.it)) {
				msg = "the index " + x.name + " lacks or differs on " + string(appendItem(nil, e.it))
				return false
			}
		}
		return true
	})
	switch {
	case msg != "":
		return msg
	case size != tb.itemBytes:
		return "its size is " + strconv.Itoa(tb.itemBytes) + ", its items' " + strconv.Itoa(size)
	}
	for i, x := range tb.indexes {
		if x.entries.Len() != counts[i] {
			return "the index " + x.name + " holds " + strconv.Itoa(x.entries.Len()) + " entries for " + strconv.Itoa(counts[i]) + " items"
		}
		if x.bytes != sizes[i] {
			return "the index " + x.name + "'s size is " + strconv.Itoa(x.bytes) + ", what it holds of its items' " + strconv.Itoa(sizes[i])
		}
	}
	return ""
}

// fzUses are the ExpressionAttributeNames (#n, "name") and the
// ExpressionAttributeValues, of values, that expr uses, each member after
// a comma ("" when it uses none).
func fzUses(expr string, values map[string]string) string {
	var out []string
	if strings.Contains(expr, "#n") {
		out = append(out, `"ExpressionAttributeNames":{"#n":"name"}`)
	}
	var used []string
	for _, ref := range slices.Sorted(maps.Keys(values)) {
		if regexp.MustCompile(ref + `\b`).MatchString(expr) {
			used = append(used, strconv.Quote(ref)+":"+values[ref])
		}
	}
	if used != nil {
		out = append(out, `"ExpressionAttributeValues":{`+strings.Join(used, ",")+`}`)
	}
	if out == nil {
		return ""
	}
	return "," + strings.Join(out, ",")
}

// fzSeed is one seed of the corpus.
type fzSeed struct {
	setup uint8
	op    string
	body  string
}

// fzSeeds are valid requests of every operation the endpoint serves, with
// expressions, and malformed ones.
func fzSeeds() []fzSeed {
	const (
		tbl   = fzTable
		ttl   = fzTable | fzTTL
		all   = fzTable | fzTTL | fzOther
		empty = 0
	)
	on := func(rest string) string { return `{"TableName":"Triggers",` + rest + `}` }
	seeds := []fzSeed{
		// Tables.
		{empty, "CreateTable", fzCreateTable},
		{empty, "CreateTable", fzCreateOther},
		{tbl, "CreateTable", fzCreateTable},
		{empty, "CreateTable", `{"TableName":"Tab1","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"B"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}],"ProvisionedThroughput":{"ReadCapacityUnits":1,"WriteCapacityUnits":1}}`},
		{empty, "CreateTable", `{"TableName":"Tab1","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"RANGE"}]}`},
		{empty, "CreateTable", `{"TableName":"Tab1","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"X"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}]}`},
		{empty, "CreateTable", `{"TableName":"Tab1","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"},{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"},{"AttributeName":"K","KeyType":"RANGE"}]}`},
		{empty, "CreateTable", `{"TableName":"Tab1","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[{"AttributeName":"K","KeyType":"HASH"}],"GlobalSecondaryIndexes":[{"IndexName":"Gsi1","KeySchema":[{"AttributeName":"K","KeyType":"HASH"}],"Projection":null}]}`},
		{empty, "CreateTable", `{"TableName":"Tab1","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"K","AttributeType":"S"}],"KeySchema":[],"LocalSecondaryIndexes":[{}]}`},
		{empty, "CreateTable", `{"TableName":"ab","BillingMode":"FREE"}`},
		{empty, "CreateTable", `{}`},
		{tbl, "DescribeTable", `{"TableName":"Triggers"}`},
		{empty, "DescribeTable", `{"TableName":"Triggers"}`},
		{all, "DeleteTable", `{"TableName":"Other"}`},
		{tbl, "DeleteTable", `{"TableName":"x"}`},
		{all, "ListTables", `{}`},
		{all, "ListTables", `{"Limit":1}`},
		{all, "ListTables", `{"Limit":1,"ExclusiveStartTableName":"Other"}`},
		{all, "ListTables", `{"Limit":0}`},
		{all, "ListTables", `{"Limit":101}`},
		{all, "ListTables", `{"Limit":1e40}`},
		{tbl, "UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":true}}`},
		{ttl, "UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":false}}`},
		{ttl, "UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":{"AttributeName":"other","Enabled":false}}`},
		{tbl, "UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":null}`},
		{tbl, "UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":{"AttributeName":"","Enabled":"yes"}}`},
		{ttl, "DescribeTimeToLive", `{"TableName":"Triggers"}`},
		{tbl, "DescribeTimeToLive", `{"TableName":"Triggers"}`},

		// Items.
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"USER#u3"},"SK":{"S":"TRIGGER#t9"},"ownerUserId":{"S":"u3"},"listedAt":{"S":"2025-05-09"},"dueShard":{"S":"1"},"nextRunAt":{"S":"2025-06-09"},"l":{"L":[{"M":{"a":{"SS":["x","y"]}}},{"BS":["AA=="]},{"NULL":true}]}},"ConditionExpression":"attribute_not_exists(PK)"`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ReturnValues":"ALL_OLD"`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ConditionExpression":"attribute_not_exists(PK)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"},"age":{"N":"43"}},"ConditionExpression":"age = :a AND size(#n) < :three AND contains(tags, :t) AND attribute_type(prefs, :m)","ExpressionAttributeNames":{"#n":"name"},"ExpressionAttributeValues":{":a":{"N":"42"},":three":{"N":"4"},":t":{"S":"a"},":m":{"S":"M"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":"-0.000e5"},"x":{"N":"+1.50E+3"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"ownerUserId":{"N":"1"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":""},"SK":{"S":"s"}}`)},
		{tbl, "PutItem", on(`"Item":null`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"}},"ReturnValues":"ALL_NEW"`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"}},"Expected":{"PK":{"Exists":false}}`)},
		{all, "PutItem", `{"TableName":"Other","Item":{"id":{"N":"1e2"},"bin":{"B":"AQID"},"num":{"N":"0.5"},"tag":{"S":"green"}}}`},
		{tbl, "GetItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}}`)},
		{tbl, "GetItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ProjectionExpression":"#n, prefs.nested.deep[2], history[2][0], tags, nope","ExpressionAttributeNames":{"#n":"name"},"ConsistentRead":true`)},
		{tbl, "GetItem", on(`"Key":{"PK":{"S":"USER#u1"}}`)},
		{tbl, "GetItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"N":"1"}}`)},
		{tbl, "GetItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ProjectionExpression":"a, a.b"`)},
		{tbl, "DeleteItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"}},"ConditionExpression":"runs = :z OR NOT attribute_exists(runs)","ExpressionAttributeValues":{":z":{"N":"0"}},"ReturnValues":"ALL_OLD"`)},
		{tbl, "DeleteItem", on(`"Key":{"PK":{"S":"USER#u9"},"SK":{"S":"x"}},"ConditionExpression":"attribute_exists(PK)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"`)},
		{tbl, "DeleteItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ReturnValues":"UPDATED_NEW"`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"}},"UpdateExpression":"SET runs = if_not_exists(runs, :z) + :one, nextRunAt = :next REMOVE expiresAt","ConditionExpression":"dueShard = :s","ExpressionAttributeValues":{":z":{"N":"0"},":one":{"N":"1"},":next":{"S":"2025-06-03T00:00:00Z"},":s":{"S":"3"}},"ReturnValues":"ALL_NEW"`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET history = list_append(history, :l), prefs.nested.deep[5] = :x, #a = #a - :one ADD tags :ss, visits :one DELETE scores :ns REMOVE bset, prefs.theme","ExpressionAttributeNames":{"#a":"age"},"ExpressionAttributeValues":{":l":{"L":[{"S":"new"}]},":x":{"S":"x"},":one":{"N":"1"},":ss":{"SS":["c"]},":ns":{"NS":["2.5"]}},"ReturnValues":"UPDATED_OLD"`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#new"},"SK":{"S":"x"}},"UpdateExpression":"SET ownerUserId = :u, listedAt = :l","ExpressionAttributeValues":{":u":{"S":"u9"},":l":{"S":"2025"}},"ReturnValues":"UPDATED_NEW"`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#new"},"SK":{"S":"x"}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET PK = :x","ExpressionAttributeValues":{":x":{"S":"x"}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET ownerUserId = :x","ExpressionAttributeValues":{":x":{"N":"1"}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET big = :b + :b","ExpressionAttributeValues":{":b":{"N":"9.9E125"}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"ADD ss :s DELETE tags :t","ExpressionAttributeValues":{":s":{"SS":["z"]},":t":{"SS":["a","b"]}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET a.b.c = :x","ExpressionAttributeValues":{":x":{"S":"x"}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET history[1] = history[0], history[9] = :x REMOVE history[2]","ExpressionAttributeValues":{":x":{"S":"x"}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET #x = :x","ExpressionAttributeNames":{"#x":""},"ExpressionAttributeValues":{":x":{"S":"x"}}`)},
		{all, "UpdateItem", `{"TableName":"Other","Key":{"id":{"N":"1"},"bin":{"B":"AQI="}},"UpdateExpression":"SET num = num + :d, tag = :t","ExpressionAttributeValues":{":d":{"N":"-10"},":t":{"S":"x"}},"ReturnValues":"ALL_OLD"}`},

		// Reads.
		{tbl, "Query", on(`"KeyConditionExpression":"PK = :pk AND begins_with(SK, :t)","FilterExpression":"attribute_exists(ownerUserId) AND runs IN (:z, :one)","ProjectionExpression":"SK, runs","ExpressionAttributeValues":{":pk":{"S":"USER#u1"},":t":{"S":"TRIGGER#"},":z":{"N":"0"},":one":{"N":"1"}}`)},
		{tbl, "Query", on(`"KeyConditionExpression":"#p = :pk AND SK BETWEEN :a AND :b","ExpressionAttributeNames":{"#p":"PK"},"ExpressionAttributeValues":{":pk":{"S":"USER#u2"},":a":{"S":"A"},":b":{"S":"Z"}},"ScanIndexForward":false,"Limit":1`)},
		{tbl, "Query", on(`"KeyConditionExpression":"PK = :pk AND SK > :s","ExpressionAttributeValues":{":pk":{"S":"USER#u2"},":s":{"S":"TRIGGER#t2"}},"ExclusiveStartKey":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t2"}},"Select":"COUNT"`)},
		{tbl, "Query", on(`"IndexName":"TriggersByUser","KeyConditionExpression":"ownerUserId = :u AND listedAt <= :l","ExpressionAttributeValues":{":u":{"S":"u2"},":l":{"S":"2025-12"}},"Select":"ALL_PROJECTED_ATTRIBUTES"`)},
		{tbl, "Query", on(`"IndexName":"DueTriggersAll","KeyConditionExpression":"dueShard = :s AND nextRunAt < :now","ExpressionAttributeValues":{":s":{"S":"3"},":now":{"S":"2025-06-02"}},"Limit":1,"ExclusiveStartKey":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"},"dueShard":{"S":"3"},"nextRunAt":{"S":"2025-06-01T00:00:00Z"}}`)},
		{tbl, "Query", on(`"IndexName":"DueTriggersAll","KeyConditionExpression":"dueShard = :s","ExpressionAttributeValues":{":s":{"S":"3"}},"ConsistentRead":true`)},
		{tbl, "Query", on(`"KeyConditionExpression":"PK = :pk OR SK = :pk","ExpressionAttributeValues":{":pk":{"S":"x"}}`)},
		{tbl, "Query", on(`"KeyConditionExpression":"PK = :pk","FilterExpression":"SK = :pk","ExpressionAttributeValues":{":pk":{"S":"x"}}`)},
		{tbl, "Query", on(`"KeyConditionExpression":"PK = :pk AND SK BETWEEN :b AND :a","ExpressionAttributeValues":{":pk":{"S":"x"},":a":{"S":"a"},":b":{"S":"b"}}`)},
		{tbl, "Query", on(`"KeyConditionExpression":"PK = :pk","ExpressionAttributeValues":{":pk":{"N":"1"}}`)},
		{tbl, "Query", on(`"KeyConditions":{}`)},
		{all, "Query", `{"TableName":"Other","KeyConditionExpression":"id = :i AND bin BETWEEN :lo AND :hi","ExpressionAttributeValues":{":i":{"N":"1"},":lo":{"B":"AA=="},":hi":{"B":"/w=="}}}`},
		{all, "Query", `{"TableName":"Other","IndexName":"ByNum","KeyConditionExpression":"id = :i AND num >= :n","ExpressionAttributeValues":{":i":{"N":"1.0"},":n":{"N":"-5"}},"Select":"ALL_ATTRIBUTES","ConsistentRead":true}`},
		{all, "Query", `{"TableName":"Other","IndexName":"ByTag","KeyConditionExpression":"tag = :t","ExpressionAttributeValues":{":t":{"S":"red"}},"Select":"ALL_ATTRIBUTES"}`},
		{all, "Query", `{"TableName":"Other","KeyConditionExpression":"id = :i AND begins_with(bin, :b)","ExpressionAttributeValues":{":i":{"N":"1"},":b":{"B":"AQ=="}},"ScanIndexForward":false}`},
		{tbl, "Scan", on(`"FilterExpression":"begins_with(SK, :t) AND NOT (listedAt BETWEEN :a AND :b)","ExpressionAttributeValues":{":t":{"S":"TRIGGER"},":a":{"S":"2025-05-02"},":b":{"S":"2025-05-03"}}`)},
		{tbl, "Scan", on(`"Segment":1,"TotalSegments":3,"Limit":2`)},
		{tbl, "Scan", on(`"IndexName":"TriggersByUser","ProjectionExpression":"ownerUserId, #l","ExpressionAttributeNames":{"#l":"listedAt"}`)},
		{tbl, "Scan", on(`"Select":"COUNT","ExclusiveStartKey":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}}`)},
		{tbl, "Scan", on(`"Segment":0,"ExclusiveStartKey":{"PK":{"S":"USER#u1"}}`)},
		{tbl, "Scan", on(`"TotalSegments":0,"Segment":0`)},
		{tbl, "Scan", on(`"Limit":0`)},
		{tbl, "Scan", on(`"Limit":-1,"Select":"NONE"`)},
		{tbl, "Scan", on(`"Limit":99999999999999999999`)},
		{tbl, "Scan", on(`"Limit":1.5`)},
		{tbl, "Scan", on(`"FilterExpression":"size(prefs.nested.deep) > :n OR contains(scores, :n) OR history[2][0] = :f","ExpressionAttributeValues":{":n":{"N":"2.5"},":f":{"BOOL":false}}`)},
		{all, "Scan", `{"TableName":"Other","IndexName":"ByNum","Select":"ALL_PROJECTED_ATTRIBUTES"}`},

		// Batches and transactions.
		{tbl, "BatchWriteItem", `{"RequestItems":{"Triggers":[{"PutRequest":{"Item":{"PK":{"S":"b"},"SK":{"S":"1"},"v":{"NS":["1","2"]}}}},{"DeleteRequest":{"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}}}}]}}`},
		{tbl, "BatchWriteItem", `{"RequestItems":{"Triggers":[{"PutRequest":{"Item":{"PK":{"S":"b"},"SK":{"S":"1"}}}},{"PutRequest":{"Item":{"PK":{"S":"b"},"SK":{"S":"1"}}}}]}}`},
		{tbl, "BatchWriteItem", `{"RequestItems":{"Triggers":[{"PutRequest":{"Item":null}}]}}`},
		{tbl, "BatchWriteItem", `{"RequestItems":{"Triggers":[{}]}}`},
		{tbl, "BatchWriteItem", `{"RequestItems":{"Triggers":[]}}`},
		{tbl, "BatchWriteItem", `{"RequestItems":{}}`},
		{tbl, "BatchGetItem", `{"RequestItems":{"Triggers":{"Keys":[{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t2"}}],"ProjectionExpression":"PK, #s, prefs.theme","ExpressionAttributeNames":{"#s":"SK"}}}}`},
		{all, "BatchGetItem", `{"RequestItems":{"Triggers":{"Keys":[{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}}]},"Other":{"Keys":[{"id":{"N":"1"},"bin":{"B":"AA=="}}],"ConsistentRead":true}}}`},
		{tbl, "BatchGetItem", `{"RequestItems":{"Triggers":{"Keys":[]}}}`},
		{tbl, "BatchGetItem", `{"RequestItems":{"Triggers":{"Keys":[null]}}}`},
		{tbl, "TransactWriteItems", `{"TransactItems":[
			{"ConditionCheck":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ConditionExpression":"attribute_exists(PK)"}},
			{"Put":{"TableName":"Triggers","Item":{"PK":{"S":"USER#u3"},"SK":{"S":"TRIGGER#t4"},"ownerUserId":{"S":"u3"},"listedAt":{"S":"2025"}},"ConditionExpression":"attribute_not_exists(PK)"}},
			{"Update":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t2"}},"UpdateExpression":"SET nextRunAt = :n","ExpressionAttributeValues":{":n":{"S":"2025-07"}}}},
			{"Delete":{"TableName":"Triggers","Key":{"PK":{"S":"SESSION#s1"},"SK":{"S":"META"}}}}],
			"ClientRequestToken":"tok-1"}`},
		{tbl, "TransactWriteItems", `{"TransactItems":[{"ConditionCheck":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ConditionExpression":"attribute_not_exists(PK)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}},{"Update":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t2"}},"UpdateExpression":"SET ownerUserId = :n","ExpressionAttributeValues":{":n":{"N":"1"}}}}]}`},
		{tbl, "TransactWriteItems", `{"TransactItems":[{"Delete":{"TableName":"Triggers","Key":{"PK":{"S":"a"},"SK":{"S":"b"}}}},{"Delete":{"TableName":"Triggers","Key":{"PK":{"S":"a"},"SK":{"S":"b"}}}}]}`},
		{tbl, "TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"Triggers"},"Delete":{"TableName":"Triggers"}}]}`},
		{tbl, "TransactWriteItems", `{"TransactItems":[{}]}`},
		{tbl, "TransactWriteItems", `{"TransactItems":[]}`},
		{tbl, "TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ProjectionExpression":"#t","ExpressionAttributeNames":{"#t":"tags"}}},{"Get":{"TableName":"Triggers","Key":{"PK":{"S":"none"},"SK":{"S":"none"}}}}]}`},
		{tbl, "TransactGetItems", `{"TransactItems":[{"Get":null}]}`},
		{tbl, "TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"Triggers"}}]}`},

		// Malformed requests.
		{tbl, "Nope", `{}`},
		{tbl, "", `{}`},
		{tbl, "getitem", `{}`},
		{tbl, "GetItem", ``},
		{tbl, "GetItem", `null`},
		{tbl, "GetItem", `[]`},
		{tbl, "GetItem", `123`},
		{tbl, "GetItem", `"Triggers"`},
		{tbl, "GetItem", `{"TableName":5}`},
		{tbl, "GetItem", `{"TableName":null,"Key":null}`},
		{tbl, "GetItem", `{"TableName":"Triggers","TableName":"Triggers"}`},
		{tbl, "GetItem", `{"TableName":"Triggers","Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PRO`},
		{tbl, "PutItem", `{"TableName":"Triggers","Item":{"PK":{"S":"p"},"SK":{"S":"s"},"x":`},
		{tbl, "GetItem", `{"TableName":"Triggers","Key":{"PK":{"S":5},"SK":{"S":"x"}}}`},
		{tbl, "GetItem", `{"TableName":"Triggers","Key":{"PK":{"S":"a","N":"1"},"SK":{"S":"x"}}}`},
		{tbl, "GetItem", `{"TableName":"Triggers","Key":{"PK":{},"SK":{"S":"x"}}}`},
		{tbl, "GetItem", `{"TableName":"Triggers","Key":{"PK":{"S":null},"SK":{"X":"x"}}}`},
		{tbl, "GetItem", `{"TableName":"Triggers","Key":[]}`},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":"1e400"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":"123456789012345678901234567890123456789"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":"1e-131"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":"1e99999999999999999999"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":"0x10"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":""}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"N":1}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"NS":["1","1.0"]}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"SS":[]}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"BS":[]}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"B":"!!not base64"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"BS":["AA=","**"]}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"NULL":false}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"BOOL":"yes"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"L":null}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"M":[]}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"L":[{"S":"x"},{}]}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":{"S":"\ud800"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"":{"S":"x"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":` + strings.Repeat(`{"M":{"m":`, 40) + `{"S":"x"}` + strings.Repeat(`}}`, 40) + `}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":` + strings.Repeat(`{"L":[`, 33) + `{"S":"x"}` + strings.Repeat(`]}`, 33) + `}`)},
		{tbl, "PutItem", on(`"Item":` + strings.Repeat(`[`, 200))},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"}},"ConditionExpression":""`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"}},"ConditionExpression":"a = :v","ExpressionAttributeValues":{}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"}},"ConditionExpression":"a = :v","ExpressionAttributeValues":{":v":null}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"}},"ConditionExpression":"#a = :v","ExpressionAttributeNames":{"#a":null},"ExpressionAttributeValues":{":v":{"S":"x"}}`)},
		{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"}},"ReturnValues":5`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET a = :v","ExpressionAttributeValues":{":v":{"SS":[]}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET a[99999999999999999999] = :v","ExpressionAttributeValues":{":v":{"S":"x"}}`)},
		{tbl, "UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET","ReturnValues":"ALL"`)},
		{tbl, "Query", on(`"KeyConditionExpression":null,"ScanIndexForward":"no"`)},
		{tbl, "Scan", on(`"Segment":99999999999999999999,"TotalSegments":-1`)},
		{tbl, "Scan", `{"TableName":"Triggers","ExclusiveStartKey":{"PK":{"NULL":true}}}`},
		{tbl, "Scan", "{\"TableName\":\"Trig\xffgers\"}"},
		{tbl, "BatchWriteItem", `{"RequestItems":{"Triggers":null}}`},
		{tbl, "BatchWriteItem", `{"RequestItems":{"Triggers":[{"PutRequest":{"Item":{"PK":{"S":"p"}}},"DeleteRequest":{"Key":{}}}]}}`},
		{tbl, "BatchGetItem", `{"RequestItems":null}`},
		{tbl, "TransactWriteItems", `{"TransactItems":null}`},
		{tbl, "TransactWriteItems", `{"TransactItems":[null]}`},
		{tbl, "TransactGetItems", `{"TransactItems":[null]}`},
		{tbl, "TransactGetItems", `{"TransactItems":"x"}`},
	}
	// Expressions of every kind on the profile, whose attributes have every
	// type: each reads or changes it, or is refused.
	const profile = `"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}}`
	values := map[string]string{":s": `{"S":"a"}`, ":n": `{"N":"2.5"}`, ":b": `{"B":"AQ=="}`, ":t": `{"BOOL":true}`, ":z": `{"NULL":true}`,
		":ss": `{"SS":["a","b"]}`, ":ns": `{"NS":["-3","1","2.5"]}`, ":bs": `{"BS":["Ag==","AQ=="]}`,
		":l": `{"L":[{"S":"h0"},{"N":"7"},{"L":[{"BOOL":false}]}]}`, ":m": `{"M":{"theme":{"S":"dark"}}}`, ":tS": `{"S":"SS"}`, ":bad": `{"S":"X"}`}
	// uses are the members of names and values that expr uses ("" when
	// none), each after a comma.
	uses := func(expr string) string { return fzUses(expr, values) }
	for _, c := range []string{
		"tags = :ss AND scores = :ns AND bset = :bs", "history = :l OR prefs = :m OR flag = :t OR nothing = :z", "bdata = :b AND age <> :n",
		"contains(history, :s) OR contains(#n, :s) OR contains(bdata, :b) OR contains(tags, :s) OR contains(scores, :n) OR contains(bset, :b)",
		"size(tags) = :n OR size(bdata) > :n OR size(prefs) < :n OR size(history) >= :n OR size(age) = :n OR size(flag) = :n",
		"attribute_type(tags, :tS) AND attribute_type(age, :bad)", "attribute_type(:s, :tS)", "attribute_exists(:s)", "begins_with(age, :n)",
		"begins_with(bdata, :b) AND begins_with(#n, :s)", "contains(size(tags), :n)", "size(tags)", "age = age", "begins_with(#n, #n)",
		"age BETWEEN :n AND :s", "age BETWEEN :n AND :n", "#n BETWEEN :b AND :b", "age IN (:n, :s, :ns, :l)", "((age = :n))", "(age) = :n AND (#n = :s)",
		"NOT NOT NOT attribute_not_exists(prefs.nested.deep[2].x)", "history[2][0] = :t AND prefs.nested.deep[1] = :s", "history[1].x = :n OR prefs[0] = :n",
		"age < :s OR age > :b OR bdata <= :b OR #n >= :s OR tags < :ss", "foo(age) = :n", "size(:s) > :n", "attribute_exists(age, #n)", "age = :n =", "#n IN ()",
	} {
		seeds = append(seeds, fzSeed{tbl, "DeleteItem", on(profile + `,"ConditionExpression":"` + c + `"` + uses(c) + `,"ReturnValuesOnConditionCheckFailure":"ALL_OLD"`)})
	}
	for _, u := range []string{
		"SET a = nope", "SET a = #n + :n", "SET a = list_append(age, :l)", "SET a = list_append(:l, #n)", "SET a = list_append(:n, :l)", "SET a = if_not_exists(:s, :n)",
		"SET a = if_not_exists(age, :s) + :n, b = :s - :n", "SET a = size(tags)", "SET a = :n + :n + :n", "SET a = (:n + :n)", "SET a = ((age))",
		"SET history[0] = :s, history[1] = :n, history[2][0] = :t, history[9] = :b REMOVE history[5]", "REMOVE history[0], history[1], history[2]",
		"SET history[2][1].x = :s", "SET prefs.nested.deep[2].x = :s, prefs.theme.x = :s", "SET tags[0] = :s", "REMOVE prefs.nope.deeper",
		"ADD #n :s", "ADD age :ns", "ADD tags :ns", "ADD scores :ns, bset :bs, newset :ss, newnum :n", "ADD history :l", "ADD prefs.visits :n",
		"DELETE age :n", "DELETE tags :ns", "DELETE tags :ss, scores :ns, bset :bs, nope :ss", "DELETE history[0] :ss",
		"SET a = :s SET b = :s", "REMOVE a ADD a :n", "SET a = :s, a = :n", "SET a.b = :s, a[0] = :s", "SET #n = :t, age = :z, flag = :l, nothing = :m",
		"SET PK = :s", "REMOVE SK", "SET ownerUserId = :s", "SET ownerUserId = :n", "SET dueShard = :b", "SET nextRunAt = :s, dueShard = :s",
	} {
		seeds = append(seeds, fzSeed{tbl, "UpdateItem", on(profile + `,"UpdateExpression":"` + u + `"` + uses(u) + `,"ReturnValues":"ALL_NEW"`)})
	}
	for _, q := range []string{
		"PK = :pk AND SK < :sk", "PK = :pk AND SK <= :sk", "PK = :pk AND SK > :sk", "PK = :pk AND SK >= :sk", "PK = :pk AND SK = :sk",
		"PK = :pk AND SK BETWEEN :sk AND :hi", "PK = :pk AND begins_with(SK, :sk)", ":pk = PK AND :sk < SK", "(PK = :pk) AND (SK > :sk)",
		"PK = :pk AND NOT SK = :sk", "PK = :pk AND SK IN (:sk)", "PK = :pk AND SK <> :sk", "PK = :pk AND contains(SK, :sk)", "PK = :pk AND size(SK) = :sk",
		"PK = :pk AND SK = :sk AND SK = :hi", "PK = :pk AND otherAttr = :sk", "SK = :sk", "PK < :pk", "PK = :pk AND SK.x = :sk", "PK = :pk AND SK = PK",
		"PK = :pk AND :sk = :hi", "PK = :pk AND begins_with(:sk, SK)", "PK = :pk AND SK BETWEEN PK AND :hi",
	} {
		for _, forward := range []string{"true", "false"} {
			keys := map[string]string{":pk": `{"S":"USER#u2"}`, ":sk": `{"S":"TRIGGER#t2"}`, ":hi": `{"S":"TRIGGER#t9"}`}
			seeds = append(seeds, fzSeed{tbl, "Query", on(`"KeyConditionExpression":"` + q + `"` + fzUses(q, keys) + `,"ScanIndexForward":` + forward)})
		}
	}
	seeds = append(seeds,
		fzSeed{tbl, "Scan", on(`"Segment":0,"TotalSegments":2,"ExclusiveStartKey":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t2"}}`)},
		fzSeed{tbl, "Scan", on(`"Segment":1,"TotalSegments":2,"ExclusiveStartKey":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t2"}}`)},
		fzSeed{tbl, "Scan", on(`"Segment":999999,"TotalSegments":1000000`)},
		fzSeed{tbl, "Scan", on(`"IndexName":"DueTriggersAll","ExclusiveStartKey":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"},"dueShard":{"S":"3"},"nextRunAt":{"S":"2025-06-01T00:00:00Z"}},"Limit":1`)},
		fzSeed{tbl, "Scan", on(`"IndexName":"DueTriggersAll","ExclusiveStartKey":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"}}`)},
		fzSeed{tbl, "Scan", on(`"IndexName":"Nope"`)},
		fzSeed{tbl, "Scan", on(`"Select":"SPECIFIC_ATTRIBUTES"`)},
		fzSeed{tbl, "Scan", on(`"Select":"ALL_PROJECTED_ATTRIBUTES"`)},
		fzSeed{tbl, "Scan", on(`"Select":"ALL_ATTRIBUTES","ProjectionExpression":"PK"`)},
		fzSeed{tbl, "Scan", on(`"Select":"COUNT","ProjectionExpression":"PK"`)},
		fzSeed{tbl, "Scan", on(`"ExpressionAttributeNames":{"#a":"a"},"ExpressionAttributeValues":{":a":{"S":"a"}}`)},
		fzSeed{tbl, "Scan", on(`"FilterExpression":"#a = :a","ExpressionAttributeNames":{"#a":"a","` + strings.Repeat("#", 300) + `":"b"},"ExpressionAttributeValues":{":a":{"S":"a"}}`)},
		fzSeed{tbl, "Query", on(`"KeyConditionExpression":"PK = :a","ExpressionAttributeValues":{":a":{"S":"` + strings.Repeat("k", 2049) + `"}}`)},
		fzSeed{tbl, "PutItem", on(`"Item":{"PK":{"S":"` + strings.Repeat("k", 2049) + `"},"SK":{"S":"s"}}`)},
		fzSeed{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"` + strings.Repeat("s", 1025) + `"}}`)},
		fzSeed{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"dueShard":{"S":""},"nextRunAt":{"S":"x"}}`)},
		fzSeed{tbl, "PutItem", on(`"Item":{"PK":{"S":"p"},"SK":{"S":"s"},"d":{"S":"` + strings.Repeat("x", 500) + `"}},"ConditionExpression":"` + strings.Repeat("(", 600) + `"`)},
		fzSeed{all, "PutItem", `{"TableName":"Other","Item":{"id":{"N":"1"},"bin":{"B":""}}}`},
		fzSeed{all, "PutItem", `{"TableName":"Other","Item":{"id":{"S":"1"},"bin":{"B":"AA=="}}}`},
		fzSeed{all, "GetItem", `{"TableName":"Other","Key":{"id":{"N":"1.000"},"bin":{"B":"AQI="}},"ProjectionExpression":"size, m.k"}`},
		fzSeed{all, "Query", `{"TableName":"Other","IndexName":"ByNum","KeyConditionExpression":"id = :i AND begins_with(num, :n)","ExpressionAttributeValues":{":i":{"N":"1"},":n":{"N":"5"}}}`},
		fzSeed{all, "Query", `{"TableName":"Other","IndexName":"ByTag","KeyConditionExpression":"tag = :t AND id = :i","ExpressionAttributeValues":{":t":{"S":"red"},":i":{"N":"1"}}}`},
		fzSeed{all, "Scan", `{"TableName":"Other","IndexName":"ByTag","Segment":0,"TotalSegments":3,"ExclusiveStartKey":{"id":{"N":"1"},"bin":{"B":"AQI="},"tag":{"S":"red"}}}`},
	)
	// Requests in a row: each answers as the ones before left the tables.
	row := func(setup uint8, calls ...string) fzSeed {
		var ops, bodies []string
		for i := 0; i < len(calls); i += 2 {
			ops, bodies = append(ops, calls[i]), append(bodies, calls[i+1])
		}
		return fzSeed{setup, strings.Join(ops, ","), strings.Join(bodies, "\x00")}
	}
	seeds = append(seeds,
		row(tbl,
			"PutItem", on(`"Item":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t5"},"ownerUserId":{"S":"u2"},"listedAt":{"S":"2025-05-02T00:00:00Z"},"dueShard":{"S":"3"},"nextRunAt":{"S":"2025-06-01T00:00:00Z"}}`),
			"Query", on(`"IndexName":"TriggersByUser","KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u2"}},"Limit":1`),
			"UpdateItem", on(`"Key":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t5"}},"UpdateExpression":"SET listedAt = :l REMOVE dueShard","ExpressionAttributeValues":{":l":{"S":"2025-05-01"}},"ReturnValues":"ALL_OLD"`),
			"Query", on(`"IndexName":"TriggersByUser","KeyConditionExpression":"ownerUserId = :u","ExpressionAttributeValues":{":u":{"S":"u2"}},"ExclusiveStartKey":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t5"},"ownerUserId":{"S":"u2"},"listedAt":{"S":"2025-05-01"}},"ScanIndexForward":false`),
			"DeleteItem", on(`"Key":{"PK":{"S":"USER#u2"},"SK":{"S":"TRIGGER#t5"}},"ReturnValues":"ALL_OLD"`),
			"Scan", on(`"IndexName":"DueTriggersAll"`)),
		row(empty,
			"CreateTable", `{"TableName":"Nums","BillingMode":"PAY_PER_REQUEST","AttributeDefinitions":[{"AttributeName":"n","AttributeType":"N"},{"AttributeName":"g","AttributeType":"B"}],"KeySchema":[{"AttributeName":"n","KeyType":"HASH"}],"GlobalSecondaryIndexes":[{"IndexName":"ByG","KeySchema":[{"AttributeName":"g","KeyType":"HASH"},{"AttributeName":"n","KeyType":"RANGE"}],"Projection":{"ProjectionType":"KEYS_ONLY"}}]}`,
			"PutItem", `{"TableName":"Nums","Item":{"n":{"N":"-1.5e3"},"g":{"B":"AAE="},"v":{"L":[{"N":"1"}]}}}`,
			"BatchWriteItem", `{"RequestItems":{"Nums":[{"PutRequest":{"Item":{"n":{"N":"2"},"g":{"B":"AAE="}}}},{"PutRequest":{"Item":{"n":{"N":"0.001"}}}}]}}`,
			"Query", `{"TableName":"Nums","IndexName":"ByG","KeyConditionExpression":"g = :g AND n BETWEEN :a AND :b","ExpressionAttributeValues":{":g":{"B":"AAE="},":a":{"N":"-2000"},":b":{"N":"2"}}}`,
			"BatchGetItem", `{"RequestItems":{"Nums":{"Keys":[{"n":{"N":"-1500"}},{"n":{"N":"2.0"}}],"ProjectionExpression":"v[0], g"}}}`,
			"DeleteTable", `{"TableName":"Nums"}`),
		row(tbl,
			"TransactWriteItems", `{"ClientRequestToken":"t1","TransactItems":[{"Update":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"}},"UpdateExpression":"ADD runs :one","ExpressionAttributeValues":{":one":{"N":"1"}}}}]}`,
			"TransactWriteItems", `{"ClientRequestToken":"t1","TransactItems":[{"Update":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"}},"UpdateExpression":"ADD runs :one","ExpressionAttributeValues":{":one":{"N":"1"}}}}]}`,
			"TransactWriteItems", `{"ClientRequestToken":"t1","TransactItems":[{"Delete":{"TableName":"Triggers","Key":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"}}}}]}`,
			"GetItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"TRIGGER#t1"}}`)),
		row(tbl,
			"UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":true}}`,
			"DescribeTimeToLive", `{"TableName":"Triggers"}`,
			"UpdateTimeToLive", `{"TableName":"Triggers","TimeToLiveSpecification":{"AttributeName":"expiresAt","Enabled":false}}`,
			"DescribeTable", `{"TableName":"Triggers"}`),
		row(tbl,
			"UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"ADD tags :c, scores :n","ExpressionAttributeValues":{":c":{"SS":["c","a"]},":n":{"NS":["10","-3"]}},"ReturnValues":"UPDATED_NEW"`),
			"UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"DELETE tags :all, bset :b","ExpressionAttributeValues":{":all":{"SS":["a","b","c"]},":b":{"BS":["AQ=="]}},"ReturnValues":"ALL_NEW"`),
			"UpdateItem", on(`"Key":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"UpdateExpression":"SET prefs.nested.deep[0] = prefs.nested.deep[0] + :one, prefs.#new = :m REMOVE prefs.nested.deep[1]","ExpressionAttributeNames":{"#new":"new"},"ExpressionAttributeValues":{":one":{"N":"1"},":m":{"M":{"x":{"NULL":true}}}},"ReturnValues":"UPDATED_OLD"`),
			"Scan", on(`"Limit":1`),
			"Scan", on(`"ExclusiveStartKey":{"PK":{"S":"USER#u1"},"SK":{"S":"PROFILE"}},"ProjectionExpression":"prefs.nested, tags"`)),
	)
	return seeds
}

// TestEndpointDeepJSON sends JSON nested deeper than the fuzz corpus's
// seeds hold (they are kept small, so that the fuzzer minimizes quickly):
// past the decoder's limit of nesting, and a list value nested thousands
// of levels deep. Each answer must be a well-formed refusal.
func TestEndpointDeepJSON(t *testing.T) {
	for _, body := range []string{
		`{"TableName":"Triggers","Item":` + strings.Repeat(`[`, 10001),
		`{"TableName":"Triggers","Item":{"PK":{"S":"p"},"SK":{"S":"s"},"n":` + strings.Repeat(`{"L":[`, 4000) + `{"S":"x"}` + strings.Repeat(`]}`, 4000) + `}}`,
	} {
		db, _ := fzDB(t, fzTable)
		if status, out := fzServe(t, db, "PutItem", []byte(body), time.Minute); status != http.StatusBadRequest {
			t.Errorf("HTTP %d %v, want a refusal", status, out)
		}
		fzInvariants(t, db)
	}
}

// TestEndpointLargeSets holds a set as large as an item takes, and adds to,
// deletes from and compares it with sets as large: each request answers
// within the fuzz target's limit (sets compared element by element took
// minutes, the lock held all along).
func TestEndpointLargeSets(t *testing.T) {
	set := func(prefix string, n int) string {
		b := []byte(`{"SS":[`)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, prefix+strconv.Itoa(i))
		}
		return string(append(b, "]}"...))
	}
	db, _ := fzDB(t, fzTable)
	key := `"TableName":"Triggers","Key":{"PK":{"S":"p"},"SK":{"S":"s"}}`
	for _, c := range []struct {
		op, body string
		status   int
	}{
		{"PutItem", `{"TableName":"Triggers","Item":{"PK":{"S":"p"},"SK":{"S":"s"},"ss":` + set("a", 50000) + `}}`, http.StatusOK},
		// The union is over 400 KB.
		{"UpdateItem", `{` + key + `,"UpdateExpression":"ADD ss :v","ExpressionAttributeValues":{":v":` + set("b", 100000) + `}}`, http.StatusBadRequest},
		{"UpdateItem", `{` + key + `,"UpdateExpression":"DELETE ss :v","ExpressionAttributeValues":{":v":` + set("b", 100000) + `}}`, http.StatusOK},
		{"UpdateItem", `{` + key + `,"UpdateExpression":"DELETE ss :v","ExpressionAttributeValues":{":v":` + set("a", 49999) + `}}`, http.StatusOK},
		{"PutItem", `{"TableName":"Triggers","Item":{"PK":{"S":"p"},"SK":{"S":"s"},"ss":` + set("a", 50000) + `}}`, http.StatusOK},
		{"DeleteItem", `{` + key + `,"ConditionExpression":"ss = :v","ExpressionAttributeValues":{":v":` + set("a", 50000) + `}}`, http.StatusOK},
	} {
		if status, out := fzServe(t, db, c.op, []byte(c.body), 10*time.Second); status != c.status {
			t.Fatalf("%s: HTTP %d %.300v, want %d", c.op, status, out, c.status)
		}
	}
	fzInvariants(t, db)
}
