package streampoll

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// expiring answers the next GetRecords with ExpiredIteratorException when
// told to, as DynamoDB Streams does for an iterator over 15 minutes old.
type expiring struct {
	next, done atomic.Bool
}

func (x *expiring) Do(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".GetRecords") && x.next.CompareAndSwap(true, false) {
		x.done.Store(true)
		return &http.Response{StatusCode: 400, Request: req,
			Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body:   io.NopCloser(strings.NewReader(`{"__type":"com.amazonaws.dynamodb.v20120810#ExpiredIteratorException","message":"Iterator expired"}`)),
		}, nil
	}
	return http.DefaultClient.Do(req)
}

// TestExpiredIteratorRenewed: an expired iterator is renewed after the
// last record settled: nothing is lost, nothing delivered twice.
func TestExpiredIteratorRenewed(t *testing.T) {
	e := newEnv(t)
	x := &expiring{}
	o := e.sc.Options()
	e.sc = dynamodbstreams.New(o, func(o *dynamodbstreams.Options) { o.HTTPClient = x })
	for i := range 3 {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	f := &fn{}
	stop := start(t, e.poller(f, base))
	waitFor(t, "the first records", func() bool { return len(f.seqs()) == 3 })
	x.next.Store(true)
	waitFor(t, "the expiry", x.done.Load)
	for i := 3; i < 6; i++ {
		e.put(t, fmt.Sprint("S#", i), "METADATA")
	}
	all := e.streamSeqs(t)
	waitFor(t, "every record", func() bool { return len(f.seqs()) >= len(all) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := f.seqs(); !slices.Equal(got, all) {
		t.Errorf("delivered %v, want %v", got, all)
	}
}
