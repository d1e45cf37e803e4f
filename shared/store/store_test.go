package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
)

func TestMain(m *testing.M) { dynamotest.Main(m) }

var now = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func newRecord(id string) *session.Record {
	a, _ := allocation.ByName(allocation.ContainersStandard4)
	return &session.Record{
		SessionID: id, SchemaVersion: 2, UserID: "u1", CreatedAt: now,
		Sandbox: session.Sandbox{ID: allocation.SandboxID(id), Kind: allocation.KindIsolated,
			Provider: a.Provider(), ProviderStored: true, Allocation: a},
	}
}

func newRow(key, sessionID string, expires time.Time) *ledger.Row {
	return &ledger.Row{
		UserID: "u1", OperationKey: key, Intent: ledger.IntentCreateSession, Fingerprint: "fp",
		Status: ledger.StatusCompleted, SessionID: sessionID, CreatedAt: now.Format(session.TimeFormat), ExpiresAt: expires,
	}
}

func count(t *testing.T, c *dynamodb.Client, table string) int {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Items)
}

// forEachBackend runs f on a fresh table of every backend, one at a time.
func forEachBackend(t *testing.T, f func(t *testing.T, tbl *Table, c *dynamodb.Client, name string)) {
	onBackends(t, dynamotest.Backends(t), f)
}

// onEmbedded runs f on a fresh table of the embedded endpoint only: for
// concurrent transactions, which moto does not keep apart (a refused one
// puts back a copy of the table taken before the others wrote).
func onEmbedded(t *testing.T, f func(t *testing.T, tbl *Table, c *dynamodb.Client, name string)) {
	onBackends(t, dynamotest.Backends(t)[:1], f)
}

func onBackends(t *testing.T, bs []dynamotest.Backend, f func(t *testing.T, tbl *Table, c *dynamodb.Client, name string)) {
	dynamotest.ForEach(t, bs, func(t *testing.T, c *dynamodb.Client, name string) { f(t, New(c, name), c, name) })
}

// TestSessionAndLedgerTogether: a new session and its ledger row are written
// together, and a second start with the key is refused without writing.
func TestSessionAndLedgerTogether(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		if _, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow("k1", "workspace_a", now.Add(24*time.Hour)), now, nil); err != nil {
			t.Fatal(err)
		}
		rec, err := tbl.GetSession(ctx, "workspace_a")
		if err != nil || rec.Legacy() || rec.Sandbox.ID != allocation.SandboxID("workspace_a") {
			t.Fatalf("session %+v %v", rec, err)
		}
		row, err := tbl.GetLedger(ctx, "u1", "k1")
		if err != nil || row.SessionID != "workspace_a" {
			t.Fatalf("row %+v %v", row, err)
		}
		existing, err := tbl.CreateSession(ctx, newRecord("workspace_b"), *newRow("k1", "workspace_b", now.Add(24*time.Hour)), now.Add(time.Hour), nil)
		if !errors.Is(err, ErrLedgerExists) {
			t.Fatalf("second start: %v", err)
		}
		// Real DynamoDB and moto hand back the row that refused the put
		// (ALL_OLD); the embedded endpoint does not for a Put inside a
		// transaction, and the caller then reads the row.
		embedded := strings.HasSuffix(t.Name(), "/embedded")
		if existing == nil && !embedded || existing != nil && existing.SessionID != "workspace_a" {
			t.Errorf("the refusal did not carry the existing row: %+v", existing)
		}
		if _, err := tbl.GetSession(ctx, "workspace_b"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a refused start left its session: %v", err)
		}
		if n := count(t, c, name); n != 2 {
			t.Errorf("%d items, want 2", n)
		}
	})
}

// TestExpiredLedgerRowCountsAsAbsent: a row whose expiresAt has passed is
// replaced, even though it is still readable.
func TestExpiredLedgerRowCountsAsAbsent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		if _, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow("k1", "workspace_a", now.Add(time.Hour)), now, nil); err != nil {
			t.Fatal(err)
		}
		later := now.Add(time.Hour)
		if _, err := tbl.CreateSession(ctx, newRecord("workspace_b"), *newRow("k1", "workspace_b", later.Add(24*time.Hour)), later, nil); err != nil {
			t.Fatalf("start after expiry: %v", err)
		}
		row, err := tbl.GetLedger(ctx, "u1", "k1")
		if err != nil || row.SessionID != "workspace_b" {
			t.Errorf("row %+v %v", row, err)
		}
	})
}

// TestSessionKeyTaken: a session whose key is taken is refused, and its
// ledger row is not written either.
func TestSessionKeyTaken(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		if err := tbl.PutSession(ctx, newRecord("workspace_a"), nil); err != nil {
			t.Fatal(err)
		}
		if err := tbl.PutSession(ctx, newRecord("workspace_a"), nil); !errors.Is(err, ErrSessionExists) {
			t.Fatalf("plain put: %v", err)
		}
		_, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow("k2", "workspace_a", now.Add(time.Hour)), now, nil)
		if !errors.Is(err, ErrSessionExists) {
			t.Fatalf("transaction: %v", err)
		}
		if _, err := tbl.GetLedger(ctx, "u1", "k2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the ledger row was written without its session: %v", err)
		}
	})
}

// TestConcurrentStartsOneKey: of 50 concurrent transactions with one key,
// exactly one writes; the table then holds one session and one row.
func TestConcurrentStartsOneKey(t *testing.T) {
	onEmbedded(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, refused := 0, 0
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("workspace_%02d", i)
				_, err := tbl.CreateSession(context.Background(), newRecord(id), *newRow("k", id, now.Add(time.Hour)), now, nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, ErrLedgerExists):
					refused++
				default:
					t.Errorf("start %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if won != 1 || refused != 49 {
			t.Errorf("won %d, refused %d", won, refused)
		}
		if n := count(t, c, name); n != 2 {
			t.Errorf("%d items, want 2", n)
		}
	})
}

// TestTransactionConflict: real DynamoDB refuses concurrent transactions on
// one item with TransactionConflict, which the emulators never produce; it
// means the row exists, exactly like a failed condition.
func TestTransactionConflict(t *testing.T) {
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: aws.String(code)} }
	rows := []struct {
		rule    string
		reasons []types.CancellationReason
		want    error
	}{
		{"conflict on the ledger row", []types.CancellationReason{reason("None"), reason("TransactionConflict")}, ErrLedgerExists},
		{"conflict on the session", []types.CancellationReason{reason("TransactionConflict"), reason("None")}, ErrLedgerExists},
		{"ledger condition failed", []types.CancellationReason{reason("None"), reason("ConditionalCheckFailed")}, ErrLedgerExists},
		{"session condition failed", []types.CancellationReason{reason("ConditionalCheckFailed"), reason("None")}, ErrSessionExists},
		// With a trigger's advance as the third item.
		{"advance condition failed, the row exists too", []types.CancellationReason{reason("None"), reason("ConditionalCheckFailed"), reason("ConditionalCheckFailed")}, ErrTriggerMoved},
		{"conflict on the advance", []types.CancellationReason{reason("None"), reason("None"), reason("TransactionConflict")}, ErrTriggerMoved},
		{"an earlier attempt of this write took all three", []types.CancellationReason{reason("ConditionalCheckFailed"), reason("ConditionalCheckFailed"), reason("ConditionalCheckFailed")}, ErrSessionExists},
		{"conflict on the row, the advance passes", []types.CancellationReason{reason("None"), reason("TransactionConflict"), reason("None")}, ErrLedgerExists},
		{"the row exists, the advance passes", []types.CancellationReason{reason("None"), reason("ConditionalCheckFailed"), reason("None")}, ErrLedgerExists},
		// With the slot's run as the fourth.
		{"conflict on the run", []types.CancellationReason{reason("None"), reason("None"), reason("None"), reason("TransactionConflict")}, ErrTriggerMoved},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			_, err := transactionError(&types.TransactionCanceledException{CancellationReasons: r.reasons}, &Advance{})
			if !errors.Is(err, r.want) {
				t.Errorf("got %v", err)
			}
		})
	}
	if _, err := transactionError(&types.TransactionConflictException{}, &Advance{}); !errors.Is(err, ErrLedgerExists) {
		t.Errorf("conflict exception: %v", err)
	}
	throttled := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{reason("ThrottlingError"), reason("None")}}
	if _, err := transactionError(throttled, &Advance{}); problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Errorf("throttled: %v", err)
	}
}

// TestMoved: the answer to a write conditioned on a trigger as seen (a
// record of its slot with the slot's run, a change, a stop, a rewrite): a
// failed condition or a conflict on any item is a moved trigger, a
// throttled transaction service_unavailable, anything else a fault.
func TestMoved(t *testing.T) {
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: aws.String(code)} }
	canceled := func(codes ...string) error {
		tce := &types.TransactionCanceledException{}
		for _, c := range codes {
			tce.CancellationReasons = append(tce.CancellationReasons, reason(c))
		}
		return tce
	}
	for _, row := range []struct {
		rule string
		err  error
		want problem.Code // "" for ErrTriggerMoved
	}{
		{"the trigger's condition failed", canceled("ConditionalCheckFailed", "None"), ""},
		{"a conflict on the trigger", canceled("TransactionConflict", "None"), ""},
		{"a conflict on the run", canceled("None", "TransactionConflict"), ""},
		{"a failed condition alone", &types.ConditionalCheckFailedException{}, ""},
		{"a conflict alone", &types.TransactionConflictException{}, ""},
		{"throttled", canceled("ThrottlingError", "None"), problem.ServiceUnavailable},
		{"a validation error", canceled("ValidationError", "None"), problem.InternalError},
	} {
		t.Run(row.rule, func(t *testing.T) {
			err := moved("record", row.err)
			if row.want == "" && !errors.Is(err, ErrTriggerMoved) || row.want != "" && (errors.Is(err, ErrTriggerMoved) || problem.CodeOf(err) != row.want) {
				t.Errorf("got %v", err)
			}
		})
	}
	if moved("record", nil) != nil {
		t.Error("no error is no error")
	}
}

// TestEndpointDown: an unreachable endpoint is service_unavailable once the
// SDK's retries are spent.
func TestEndpointDown(t *testing.T) {
	tbl := New(localdb.Client("http://127.0.0.1:1"), "SessionsTable")
	ctx := context.Background()
	if _, err := tbl.GetSession(ctx, "workspace_a"); problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Errorf("get: %v", err)
	}
	if _, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow("k", "workspace_a", now), now, nil); problem.CodeOf(err) != problem.ServiceUnavailable {
		t.Errorf("create: %v", err)
	}
}

// TestReadsAreStronglyConsistent: every read the store sends asks for a
// strongly consistent answer (the emulators are always consistent, so only
// the request itself can show it).
func TestReadsAreStronglyConsistent(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	_, name := dynamotest.Table(t, b)
	var reads []*dynamodb.GetItemInput
	var mu sync.Mutex
	record := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("RecordReads",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if get, ok := in.Parameters.(*dynamodb.GetItemInput); ok {
						mu.Lock()
						reads = append(reads, get)
						mu.Unlock()
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	}
	tbl := New(localdb.Client(b.URL, record), name)
	ctx := context.Background()
	if _, err := tbl.CreateSession(ctx, newRecord("workspace_a"), *newRow("k", "workspace_a", now.Add(time.Hour)), now, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.GetSession(ctx, "workspace_a"); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.GetLedger(ctx, "u1", "k"); err != nil {
		t.Fatal(err)
	}
	if len(reads) != 2 {
		t.Fatalf("%d reads recorded", len(reads))
	}
	for _, r := range reads {
		if !aws.ToBool(r.ConsistentRead) {
			t.Errorf("an eventually consistent read of %v", r.Key)
		}
	}
}

// TestReplaceLedgerConditions: a lapsed row is replaced only while its
// status, fingerprint, session id and lease are what the start judged; a
// row that changed in any of them is left alone, and no session is
// written.
func TestReplaceLedgerConditions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, tbl *Table, c *dynamodb.Client, name string) {
		ctx := context.Background()
		planted := newRow("k", "workspace_old", now.Add(time.Hour))
		planted.Status, planted.LeaseUntil = ledger.StatusInProgress, now.Add(-time.Minute)
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: EncodeLedger(planted)}); err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct {
			rule   string
			change func(old *ledger.Row)
		}{
			{"another status", func(old *ledger.Row) { old.Status = ledger.StatusFailed }},
			{"another fingerprint", func(old *ledger.Row) { old.Fingerprint = "other" }},
			{"another session id", func(old *ledger.Row) { old.SessionID = "workspace_other" }},
			{"another lease", func(old *ledger.Row) { old.LeaseUntil = old.LeaseUntil.Add(time.Second) }},
			{"no lease", func(old *ledger.Row) { old.LeaseUntil = time.Time{} }},
		} {
			t.Run(r.rule, func(t *testing.T) {
				old := *planted
				r.change(&old)
				_, err := tbl.ReplaceLedger(ctx, newRecord("workspace_old"), *newRow("k", "workspace_old", now.Add(24*time.Hour)), &old, nil)
				if !errors.Is(err, ErrLedgerExists) {
					t.Fatalf("%v", err)
				}
				if row, err := tbl.GetLedger(ctx, "u1", "k"); err != nil || row.Status != ledger.StatusInProgress {
					t.Errorf("the row changed: %+v %v", row, err)
				}
				if n := count(t, c, name); n != 1 {
					t.Errorf("%d items, want the row only", n)
				}
			})
		}
		if _, err := tbl.ReplaceLedger(ctx, newRecord("workspace_old"), *newRow("k", "workspace_old", now.Add(24*time.Hour)), planted, nil); err != nil {
			t.Errorf("the unchanged row: %v", err)
		}
		if n := count(t, c, name); n != 2 {
			t.Errorf("%d items, want the session and its row", n)
		}
	})
}
