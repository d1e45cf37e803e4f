// Package faultproxy is an HTTP proxy that injects storage faults between an
// AWS SDK client and a DynamoDB or SSM endpoint, for development and tests
// only: throttling and server errors, dropped connections, slow answers,
// answers lost after the backend applied the request, a change made just
// before a request arrives, and a latency added to every request (a stand-in
// for the network between Lambda and DynamoDB). It owns the proxy, the queue
// and the standing rules of faults, and the count of requests it has seen.
package faultproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Fault is what the proxy does with one request. The zero Fault forwards
// the request unchanged.
type Fault struct {
	action  action
	delay   time.Duration
	before  func()
	status  int
	awsType string
	message string
}

type action int

const (
	forward   action = iota // forward after delay
	drop                    // close the connection without forwarding
	dropAfter               // forward, then close the connection without answering
	answer                  // answer with an AWS JSON error without forwarding
	stall                   // hold the request until the client gives up, never forwarding it
)

var (
	// Drop reads the request and closes the client's connection without
	// forwarding or answering.
	Drop = Fault{action: drop}

	// Stall holds the request, never forwarding it, until the client gives
	// up: an endpoint that does not answer in time, whatever the load on
	// the machine (a Delay forwards once it has passed, if the proxy has
	// not yet seen the client go).
	Stall = Fault{action: stall}

	// DropAfter forwards the request, lets the backend apply it and answer,
	// then closes the client's connection without passing the answer on.
	DropAfter = Fault{action: dropAfter}

	// DynamoThrottle is DynamoDB's ProvisionedThroughputExceededException.
	DynamoThrottle = Status(http.StatusBadRequest,
		"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
		"The level of configured provisioned throughput for the table was exceeded.")

	// DynamoConflict is DynamoDB's TransactionConflictException: a write
	// on an item that a transaction in flight is writing.
	DynamoConflict = Status(http.StatusBadRequest,
		"com.amazonaws.dynamodb.v20120810#TransactionConflictException",
		"Transaction is ongoing for the item")

	// DynamoInternalError is DynamoDB's InternalServerError.
	DynamoInternalError = Status(http.StatusInternalServerError,
		"com.amazonaws.dynamodb.v20120810#InternalServerError",
		"Internal server error")

	// SSMThrottle is Parameter Store's ThrottlingException.
	SSMThrottle = Status(http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
)

// Delay waits d, then forwards the request. The request is not forwarded if
// the client gives up first.
func Delay(d time.Duration) Fault { return Fault{action: forward, delay: d} }

// Before calls fn, then forwards the request: what fn changes (through
// another client) happens just before the request reaches the backend.
func Before(fn func()) Fault { return Fault{action: forward, before: fn} }

// Status answers with the HTTP status code and the AWS JSON error body
// {"__type": awsType, "message": message}, without forwarding.
func Status(code int, awsType, message string) Fault {
	return Fault{action: answer, status: code, awsType: awsType, message: message}
}

// Proxy forwards requests to one endpoint, applying queued faults. It is
// safe for concurrent use.
type Proxy struct {
	url     string
	srv     *http.Server
	fwd     *httputil.ReverseProxy
	backend *http.Transport

	mu       sync.Mutex
	queue    []queued
	standing []*standing
	latency  time.Duration
	counts   map[string]int
	total    int
}

type queued struct {
	op    string
	fault Fault
}

// standing is a rule that gives a fault to every k-th request of an
// operation, until the rules are cleared.
type standing struct {
	op    string
	every int
	seen  int
	fault Fault
}

// New starts a proxy to target (e.g. "http://127.0.0.1:8000") listening on
// a free port of 127.0.0.1. It panics if target is not a URL or no port is
// free, as httptest.NewServer does.
func New(target string) *Proxy {
	to, err := url.Parse(target)
	if err != nil {
		panic(fmt.Sprintf("faultproxy: target %q: %v", target, err))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("faultproxy: listen: %v", err))
	}
	backend := http.DefaultTransport.(*http.Transport).Clone()
	backend.Proxy = nil
	backend.MaxIdleConnsPerHost = 256 // clients that send many requests at once
	p := &Proxy{
		url:     "http://" + ln.Addr().String(),
		backend: backend,
		counts:  map[string]int{},
		fwd: &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(to)
				r.Out.Host = r.In.Host // the Host the client signed
			},
			Transport: backend,
			// A client that gave up, or a fault that hung up, is what the
			// tests ask for, not news.
			ErrorLog: log.New(io.Discard, "", 0),
			// Buffers are reused, as a network would cost no allocation:
			// a burst's benchmark measures the firing, not the proxy.
			BufferPool: &buffers{},
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p
}

// URL is the proxy's base URL, to use as the client's endpoint.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy and closes its connections, those of requests in
// progress included.
func (p *Proxy) Close() {
	_ = p.srv.Close()
	p.backend.CloseIdleConnections()
}

// Inject queues f for the next n requests for operation op, the part of the
// X-Amz-Target header after its last dot (e.g. "TransactWriteItems",
// "GetParametersByPath"); op "" matches every request. Each request takes
// the first queued fault that matches it; a request that matches none is
// forwarded unchanged.
func (p *Proxy) Inject(op string, n int, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.queue = append(p.queue, queued{op, f})
	}
}

// InjectEvery gives f to every k-th request for operation op ("" matches
// every request), counted from now, until ClearEvery: a share of the
// requests fails, whatever else is going on. A queued fault comes first.
func (p *Proxy) InjectEvery(op string, k int, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.standing = append(p.standing, &standing{op: op, every: k, fault: f})
}

// ClearEvery removes the rules of InjectEvery.
func (p *Proxy) ClearEvery() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.standing = nil
}

// SetLatency makes every request that is forwarded wait d first.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Count is the number of requests seen for operation op, or of all requests
// when op is "".
func (p *Proxy) Count(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op == "" {
		return p.total
	}
	return p.counts[op]
}

// Requests runs do and returns the requests seen meanwhile, by
// operation (none where there were none): what do asked of the endpoint,
// when nothing else uses the proxy at the same time.
func (p *Proxy) Requests(do func()) map[string]int {
	p.mu.Lock()
	before := maps.Clone(p.counts)
	p.mu.Unlock()
	do()
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]int{}
	for op, n := range p.counts {
		if d := n - before[op]; d > 0 {
			seen[op] = d
		}
	}
	return seen
}

// next counts a request for op and takes its fault: from the queue, else
// from a standing rule, else a forward after the latency.
func (p *Proxy) next(op string) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	p.counts[op]++
	for i, q := range p.queue {
		if q.op == "" || q.op == op {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			return q.fault
		}
	}
	f := Fault{delay: p.latency}
	given := false
	for _, r := range p.standing {
		if r.op == "" || r.op == op {
			// Every rule counts every request it matches, whichever gives
			// the request its fault.
			if r.seen++; r.seen%r.every == 0 && !given {
				f, given = r.fault, true
			}
		}
	}
	return f
}

// ServeHTTP counts the request and applies the fault it takes.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	f := p.next(target[strings.LastIndex(target, ".")+1:])
	switch f.action {
	case drop:
		_, _ = io.Copy(io.Discard, r.Body)
		hangUp(w)
	case dropAfter:
		p.fwd.ServeHTTP(discard{}, r)
		hangUp(w)
	case stall:
		<-r.Context().Done()
	case answer:
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(f.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": f.awsType, "message": f.message})
	default:
		if f.before != nil {
			f.before()
		}
		if f.delay > 0 {
			select {
			case <-time.After(f.delay):
			case <-r.Context().Done():
				return
			}
		}
		// The request's body is still read once the answer has begun:
		// the backend's transport reads past its end after sending it,
		// and an HTTP/1 server otherwise closes it as the answer's header
		// goes out, which tears the backend's connection down and cuts
		// the answer (a large one, such as a query's, now and then).
		_ = http.NewResponseController(w).EnableFullDuplex()
		p.fwd.ServeHTTP(w, r)
	}
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes the connection as well
	}
	_ = conn.Close()
}

// discard is a ResponseWriter that throws the answer away.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// buffers is a pool of the proxy's copy buffers.
type buffers struct{ pool sync.Pool }

func (b *buffers) Get() []byte {
	if buf, ok := b.pool.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

func (b *buffers) Put(buf []byte) { b.pool.Put(&buf) }
