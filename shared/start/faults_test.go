package start_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cloud-agent/control-plane/infra/local/apitest"
	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/store"
)

// noInternals fails when an answer shows what lies behind the service: the
// SDK's messages, the table's name.
func noInternals(t *testing.T, h *apitest.Harness, res apitest.Result) {
	t.Helper()
	for _, internal := range []string{"operation error", "DynamoDB", "dynamodb", "exceeded maximum", h.Table, "127.0.0.1"} {
		if strings.Contains(res.Raw, internal) {
			t.Errorf("the answer shows %q: %s", internal, res.Raw)
		}
	}
}

// TestFaults: throttling, 500s, dropped connections and timeouts are
// retried by the SDK, then answered 503 with Retry-After; a lost answer is
// recovered; the table then holds exactly what was created (a session,
// its prompt, its row), never half a session, never two.
func TestFaults(t *testing.T) {
	withKey := body(map[string]any{"operationKey": "k"})
	rows := []struct {
		rule   string
		op     string
		n      int
		fault  faultproxy.Fault
		body   string
		status int
		items  int
	}{
		{"one throttle is retried", "TransactWriteItems", 1, faultproxy.DynamoThrottle, withKey, 201, 4},
		{"throttled beyond the retries", "TransactWriteItems", 10, faultproxy.DynamoThrottle, withKey, 503, 0},
		{"500s beyond the retries", "TransactWriteItems", 10, faultproxy.DynamoInternalError, withKey, 503, 0},
		{"dropped connections", "TransactWriteItems", 10, faultproxy.Drop, withKey, 503, 0},
		{"an endpoint too slow to answer", "TransactWriteItems", 10, faultproxy.Stall, withKey, 503, 0}, // held past the attempts' 100 ms
		{"throttled without a key", "TransactWriteItems", 10, faultproxy.DynamoThrottle, body(nil), 503, 0},
		{"the environments' read throttled", "BatchGetItem", 10, faultproxy.DynamoThrottle, body(nil), 503, 0},
		{"a lost answer with a key", "TransactWriteItems", 1, faultproxy.DropAfter, withKey, 201, 4},
		{"a lost answer without a key", "TransactWriteItems", 1, faultproxy.DropAfter, body(nil), 201, 3},
		// Real DynamoDB's answer to a transaction on an item another
		// transaction is writing: the row is read, there is none, and the
		// start tries again.
		{"a transaction conflict", "TransactWriteItems", 1, faultproxy.DynamoConflict, withKey, 201, 4},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			h, p := apitest.Faulty(t, apitest.AttemptTimeout(100*time.Millisecond))
			p.Inject(r.op, r.n, r.fault)
			res := post(h, user, r.body)
			if res.Status != r.status {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			if r.status == 503 && (res.Code() != "service_unavailable" || res.Headers["Retry-After"] == "") {
				t.Errorf("%v %s", res.Headers, res.Raw)
			}
			noInternals(t, h, res)
			if n := len(h.Items()); n != r.items {
				t.Errorf("%d items, want %d", n, r.items)
			}
			if r.status == 201 {
				id, _ := res.Body["sessionId"].(string)
				if look := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/" + id + "/allocation", Claims: user}); look.Status != 200 {
					t.Errorf("the session it reported: %d", look.Status)
				}
				if p.Count(r.op) < 2 {
					t.Errorf("%s was sent %d times: the fault was not retried", r.op, p.Count(r.op))
				}
			}
		})
	}
	t.Run("a replay after the fault clears", func(t *testing.T) {
		h, p := apitest.Faulty(t)
		const attempts = 4 // the DynamoDB client's retry budget
		p.Inject("TransactWriteItems", attempts, faultproxy.DynamoThrottle)
		if res := post(h, user, withKey); res.Status != 503 || p.Count("TransactWriteItems") != attempts {
			t.Fatalf("%d after %d attempts", res.Status, p.Count("TransactWriteItems"))
		}
		first := post(h, user, withKey)
		again := post(h, user, withKey)
		if first.Status != 201 || again.Status != 200 || again.Body["sessionId"] != first.Body["sessionId"] || len(h.Items()) != 4 {
			t.Errorf("%d %d, %d items", first.Status, again.Status, len(h.Items()))
		}
	})
	t.Run("a key kept busy by conflicts at every try", func(t *testing.T) {
		// Each try of the ledger's rounds (commit.Tries) meets a conflict
		// and finds no row: the start gives up with a 503, having written
		// nothing, and its retry starts the session.
		h, p := apitest.Faulty(t)
		p.Inject("TransactWriteItems", commit.Tries, faultproxy.DynamoConflict)
		res := post(h, user, withKey)
		if res.Status != 503 || res.Headers["Retry-After"] == "" || !strings.Contains(res.Raw, "The operation key is busy.") || len(h.Items()) != 0 {
			t.Fatalf("%d %v %s, %d items", res.Status, res.Headers, res.Raw, len(h.Items()))
		}
		if p.Count("TransactWriteItems") != commit.Tries || p.Count("GetItem") != commit.Tries {
			t.Errorf("%d transactions and %d reads of the row, want %d of each", p.Count("TransactWriteItems"), p.Count("GetItem"), commit.Tries)
		}
		if again := post(h, user, withKey); again.Status != 201 || len(h.Items()) != 4 {
			t.Errorf("the retry: %d %s, %d items", again.Status, again.Raw, len(h.Items()))
		}
	})
	t.Run("the lookup when reads fail", func(t *testing.T) {
		h, p := apitest.Faulty(t)
		p.Inject("GetItem", 10, faultproxy.Drop)
		res := h.Do(apitest.Call{Method: "GET", Path: "/v1/sessions/workspace_x/allocation", Claims: user})
		if res.Status != 503 || res.Headers["Retry-After"] == "" {
			t.Errorf("%d %s", res.Status, res.Raw)
		}
	})
	t.Run("settings unreadable on a cold start", func(t *testing.T) {
		h, _ := apitest.Faulty(t)
		h.BreakSettings()
		if res := post(h, user, withKey); res.Status != 503 || len(h.Items()) != 0 {
			t.Errorf("%d %s", res.Status, res.Raw)
		}
	})
}

// TestStorageFaultsThatAreNotTransient: a DynamoDB error a retry cannot
// mend (here a table that does not exist) is internal_error, not 503.
func TestStorageFaultsThatAreNotTransient(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	c := localdb.Client(b.URL, store.Counting)
	h := apitest.NewOn(t, c, c, "NoSuchTable")
	for _, k := range []string{"", "k"} {
		set := map[string]any{}
		if k != "" {
			set["operationKey"] = k
		}
		r := post(h, user, body(set))
		if r.Status != 500 || r.Code() != "internal_error" || r.Headers["Retry-After"] != "" {
			t.Errorf("key %q: %d %v %s", k, r.Status, r.Headers, r.Raw)
		}
		noInternals(t, h, r)
	}
}
