package dynamo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json/jsontext"
	"encoding/json/v2"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DB is the embedded endpoint's tables, and the http.Handler that answers
// DynamoDB's JSON protocol for them.
type DB struct {
	// mu guards every table: held shared by reads, alone by writes, only
	// while a request works on the items it touches (its body is decoded
	// before and its answer encoded after).
	mu     sync.RWMutex
	tables map[string]*table
	// tokens are the ClientRequestTokens of the transactions that
	// succeeded within the last 10 minutes.
	tokens map[string]token
	// tokenOrder holds the tokens' keys, oldest first.
	tokenOrder []string
	// streams are the tables' streams by ARN, enabled or disabled (for
	// 24 hours), of tables that are or were; seq is the last sequence
	// number one gave a record, and streamCap the most records one keeps.
	streams   map[string]*stream
	seq       uint64
	streamCap int
	// iteratorKey signs the shard iterators.
	iteratorKey [32]byte
	now         func() time.Time
	// requests numbers the answers' request ids.
	requests atomic.Uint64
}

// token is a transaction's ClientRequestToken: the request it came with
// and when.
type token struct {
	request string
	at      time.Time
}

// New is an empty DB. Its sequence numbers begin at the time it is made
// (in nanoseconds, to the microsecond), so that a new DB's follow an older
// one's.
func New() *DB {
	db := &DB{tables: map[string]*table{}, tokens: map[string]token{}, now: time.Now,
		streams: map[string]*stream{}, seq: uint64(time.Now().UnixMicro()) * 1000, streamCap: streamCap}
	_, _ = rand.Read(db.iteratorKey[:])
	return db
}

// maxBody is the largest request DynamoDB takes (16 MB, a BatchWriteItem's
// limit); a larger one is refused before it is read.
const maxBody = 16 << 20

// ServeHTTP answers one request of DynamoDB's JSON protocol (POST, the
// operation in X-Amz-Target).
func (db *DB) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	ops := operations
	op, ok := strings.CutPrefix(target, "DynamoDB_20120810.")
	if !ok {
		ops = streamOperations
		op, ok = strings.CutPrefix(target, "DynamoDBStreams_20120810.")
	}
	body, answer := getBuffer(), getBuffer()
	defer putBuffer(body)
	defer putBuffer(answer)
	var out []byte
	var err error
	var rerr error
	*body, rerr = readBody(r, *body)
	switch {
	case r.Method != http.MethodPost:
		err = &apiError{Type: "com.amazon.coral.service#UnknownOperationException", Message: "the endpoint takes POST requests only"}
	case rerr != nil:
		err = serializationError("reading the request: %v", rerr)
	case len(*body) > maxBody:
		err = &apiError{Type: "com.amazon.coral.service#RequestEntityTooLarge", Message: "Request size exceeded 16777216 bytes", status: http.StatusRequestEntityTooLarge}
	case !ok || ops[op] == nil:
		err = &apiError{Type: "com.amazon.coral.service#UnknownOperationException", Message: "the operation " + strconv.Quote(target) + " is not one of DynamoDB's or DynamoDB Streams', or not one the embedded endpoint serves"}
	default:
		out, err = ops[op](db, (*answer)[:0], *body)
	}
	var api *apiError
	status := http.StatusOK
	switch {
	case errors.As(err, &api):
		out, status = api.body(), api.statusCode()
	case err != nil:
		api = &apiError{Type: "com.amazonaws.dynamodb.v20120810#InternalServerError", Message: err.Error(), status: http.StatusInternalServerError}
		out, status = api.body(), api.statusCode()
	}
	h := w.Header()
	vals := []string{strconv.Itoa(len(out)), strconv.FormatUint(uint64(crc32.ChecksumIEEE(out)), 10), strconv.FormatUint(db.requests.Add(1), 10)}
	h["Content-Type"] = contentType
	h["Content-Length"] = vals[0:1:1]
	h["X-Amz-Crc32"] = vals[1:2:2]
	h["X-Amzn-Requestid"] = vals[2:3:3]
	w.WriteHeader(status)
	_, _ = w.Write(out)
	*answer = out
}

// contentType is every answer's Content-Type, one slice that every
// answer's header holds (none changes it).
var contentType = []string{"application/x-amz-json-1.0"}

// buffers hold the requests' bodies and their answers, for the next
// requests: nothing a request reads or answers keeps its bytes (strings
// are copies), so that each is free once the answer is written.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

// maxKept is the largest buffer kept for the next requests.
const maxKept = 1 << 20

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) <= maxKept {
		*b = (*b)[:0]
		buffers.Put(b)
	}
}

// readBody reads a request's body, up to one byte past maxBody, into buf,
// grown first to the size the request gives.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	b := bytes.NewBuffer(slices.Grow(buf[:0], int(min(max(r.ContentLength, 0), maxBody))+bytes.MinRead))
	_, err := b.ReadFrom(io.LimitReader(r.Body, maxBody+1))
	return b.Bytes(), err
}

// operation appends its answer to one operation's request body to dst.
type operation func(db *DB, dst, body []byte) ([]byte, error)

// operations are the operations the endpoint serves.
var operations map[string]operation

func init() {
	operations = map[string]operation{
		"CreateTable":        serve((*DB).createTable),
		"DeleteTable":        serve((*DB).deleteTable),
		"DescribeTable":      serve((*DB).describeTable),
		"UpdateTable":        serve((*DB).updateTable),
		"ListTables":         serve((*DB).listTables),
		"UpdateTimeToLive":   serve((*DB).updateTimeToLive),
		"DescribeTimeToLive": serve((*DB).describeTimeToLive),
		"PutItem":            serve((*DB).putItem),
		"GetItem":            serve((*DB).getItem),
		"DeleteItem":         serve((*DB).deleteItem),
		"UpdateItem":         serve((*DB).updateItem),
		"Query":              serve((*DB).query),
		"Scan":               serve((*DB).scan),
		"BatchWriteItem":     serve((*DB).batchWriteItem),
		"BatchGetItem":       serve((*DB).batchGetItem),
		"TransactWriteItems": serve((*DB).transactWriteItems),
		"TransactGetItems":   serve((*DB).transactGetItems),
	}
}

// serve turns a method taking its request decoded into an operation.
func serve[In any](f func(*DB, *In) (any, error)) operation {
	return func(db *DB, dst, body []byte) ([]byte, error) {
		in := new(In)
		if err := decodeJSON(body, in); err != nil {
			return nil, err
		}
		if k, ok := any(in).(keeper); ok {
			k.keep(body)
		}
		out, err := f(db, in)
		if err != nil {
			return nil, err
		}
		if m, ok := out.(map[string]any); ok {
			return appendAnswer(dst, m)
		}
		b, err := marshalAnswer(out)
		return append(dst, b...), err
	}
}

func marshalAnswer(v any) ([]byte, error) {
	return json.Marshal(v, json.OmitZeroStructFields(true), json.Deterministic(true))
}

// appendAnswer appends an answer's members, their names in order: items,
// lists of items and counts written as they are, anything else marshaled.
func appendAnswer(dst []byte, m map[string]any) ([]byte, error) {
	dst = append(dst, '{')
	for i, name := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, name)
		dst = append(dst, ':')
		switch v := m[name].(type) {
		case item:
			dst = appendItem(dst, v)
		case []item:
			dst = append(dst, '[')
			for j, it := range v {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = appendItem(dst, it)
			}
			dst = append(dst, ']')
		case int:
			dst = strconv.AppendInt(dst, int64(v), 10)
		default:
			b, err := marshalAnswer(v)
			if err != nil {
				return nil, err
			}
			dst = append(dst, b...)
		}
	}
	return append(dst, '}'), nil
}

// keeper is a request that keeps what its body was.
type keeper interface{ keep(body []byte) }

func unmarshal(body []byte, v any) error {
	return json.Unmarshal(body, v, jsontext.AllowDuplicateNames(false))
}

func appendString(dst []byte, s string) []byte {
	dst, _ = jsontext.AppendQuote(dst, s)
	return dst
}

// Endpoint is a DB served over HTTP, with its expired items swept.
type Endpoint struct {
	URL   string
	DB    *DB
	srv   *http.Server
	stop  context.CancelFunc
	done  chan struct{}
	sweep time.Duration
}

// sweepEvery is how often an Endpoint deletes the items whose time to live
// has passed, unless told otherwise (DynamoDB does within days of it).
const sweepEvery = time.Minute

// Option sets how an Endpoint runs.
type Option func(*Endpoint)

// SweepEvery makes the endpoint sweep expired items every d (d > 0).
func SweepEvery(d time.Duration) Option { return func(ep *Endpoint) { ep.sweep = d } }

// Start serves an empty DB on addr (host:port; port 0 picks a free one),
// and sweeps its expired items once a minute.
func Start(addr string, opts ...Option) (*Endpoint, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	db := New()
	ctx, stop := context.WithCancel(context.Background())
	ep := &Endpoint{URL: "http://" + ln.Addr().String(), DB: db, stop: stop, done: make(chan struct{}), sweep: sweepEvery,
		srv: &http.Server{Handler: db, ReadHeaderTimeout: 10 * time.Second}}
	for _, o := range opts {
		o(ep)
	}
	if ep.sweep <= 0 {
		_ = ln.Close()
		stop()
		return nil, fmt.Errorf("dynamo: a sweep every %v: it must be more than 0", ep.sweep)
	}
	go func() { _ = ep.srv.Serve(ln) }()
	go func() {
		defer close(ep.done)
		tick := time.NewTicker(ep.sweep)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				db.Sweep()
			}
		}
	}()
	return ep, nil
}

// Close stops serving and sweeping.
func (ep *Endpoint) Close(ctx context.Context) error {
	ep.stop()
	<-ep.done
	return ep.srv.Shutdown(ctx)
}
