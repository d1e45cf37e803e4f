package bus_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/shared/bus"
)

// counting serves the EventBridge stand-in and counts PutEvents calls.
type counting struct {
	*eventbus.Bus
	calls int
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.calls++
	c.Bus.ServeHTTP(w, r)
}

func newBus(t *testing.T) (*bus.Bus, *counting) {
	t.Helper()
	c := &counting{Bus: eventbus.New("SessionsBus", &bytes.Buffer{})}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return bus.New(eventbus.Client(srv.URL), "SessionsBus"), c
}

func entry(i, size int) bus.Entry {
	pad := strings.Repeat("x", max(0, size-len(`{"n":"0000","pad":""}`)))
	return bus.Entry{Source: "s", DetailType: "d", Detail: fmt.Appendf(nil, `{"n":"%04d","pad":"%s"}`, i, pad)}
}

// TestCalls: entries go in calls of at most 10 and 256 KB, in order, all
// put: 23 small entries in 3 calls; 4 of 100 KB in 2 (two fill a call
// under 256 KB, a third would not).
func TestCalls(t *testing.T) {
	for _, r := range []struct {
		n, size, calls int
	}{{23, 50, 3}, {4, 100 << 10, 2}} {
		b, c := newBus(t)
		var entries []bus.Entry
		for i := range r.n {
			entries = append(entries, entry(i, r.size))
		}
		c.calls = 0
		refused, err := b.Put(context.Background(), entries)
		got, _, _ := c.Events(context.Background(), "", 0)
		if len(refused) != 0 || err != nil || len(got) != r.n || c.calls != r.calls {
			t.Fatalf("%d of %d bytes: refused %v %v, %d put in %d calls, want %d", r.n, r.size, refused, err, len(got), c.calls, r.calls)
		}
		for i, ev := range got {
			if !strings.HasPrefix(string(ev.Detail), fmt.Sprintf(`{"n":"%04d"`, i)) {
				t.Errorf("event %d is %.12s: out of order", i, ev.Detail)
			}
		}
	}
}

// TestRefusedAgain: only the refused entries are put again, each once
// more, until none is refused; entries refused past every try are
// answered by index.
func TestRefusedAgain(t *testing.T) {
	b, c := newBus(t)
	c.SetFaults(eventbus.Faults{RefuseNext: 2, ThrottleNext: 1})
	entries := []bus.Entry{entry(0, 50), entry(1, 50), entry(2, 50), entry(3, 50), entry(4, 50)}
	refused, err := b.Put(context.Background(), entries)
	got, _, _ := c.Events(context.Background(), "", 0)
	if len(refused) != 0 || err != nil || len(got) != 5 {
		t.Fatalf("refused %v %v, %d put", refused, err, len(got))
	}
	b, c = newBus(t)
	c.SetFaults(eventbus.Faults{RefuseNext: 2 * bus.Tries})
	refused, _ = b.Put(context.Background(), entries[:2])
	if got, _, _ := c.Events(context.Background(), "", 0); fmt.Sprint(refused) != "[0 1]" || len(got) != 0 {
		t.Errorf("refused %v, %d put", refused, len(got))
	}
}
