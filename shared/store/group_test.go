package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/faultproxy"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// groupedStart is one start of a grouped table: a slot of trigger trg_<i>,
// its new session and ledger row with the slot's advance.
type groupedStart struct {
	seen *trigger.Trigger
	id   string // the session's
	key  string // the row's operation key
}

// groupedStarts creates n due triggers and returns a start of each.
func groupedStarts(t *testing.T, tbl *Table, n int) []groupedStart {
	t.Helper()
	starts := make([]groupedStart, n)
	for i := range starts {
		tr := newTrigger(fmt.Sprintf("trg_%d", i), "u1", "", now)
		tr.NextRunAt = now
		if err := tbl.CreateTrigger(context.Background(), tr, 100); err != nil {
			t.Fatal(err)
		}
		seen, err := tbl.GetTrigger(context.Background(), tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		starts[i] = groupedStart{seen: seen, id: fmt.Sprintf("workspace_%d", i), key: fmt.Sprintf("trigger:trg_%d:slot", i)}
	}
	return starts
}

func (s groupedStart) create(ctx context.Context, tbl *Table) (*ledger.Row, error) {
	adv := &Advance{Seen: s.seen, Run: trigger.Run{At: now, Status: trigger.StatusFired, RecordedAt: now}, Next: now.Add(time.Hour)}
	return tbl.CreateSession(ctx, newRecord(s.id), *newRow(s.key, s.id, now.Add(24*time.Hour)), now, adv)
}

// throughProxy is the backend's table through a fault proxy, and a
// context Grouped on it, sends at a time.
func throughProxy(t *testing.T, b dynamotest.Backend, name string, sends int, optFns ...func(*dynamodb.Options)) (*Table, context.Context, *faultproxy.Proxy) {
	p := faultproxy.New(b.Endpoint(t))
	t.Cleanup(p.Close)
	tbl := New(localdb.Client(p.URL(), optFns...), name)
	return tbl, tbl.Grouped(context.Background(), sends), p
}

// queued waits until n starts wait in the queue of ctx's group.
func queued(t *testing.T, ctx context.Context, n int) {
	deadline := time.Now().Add(10 * time.Second)
	g := groupOf(ctx)
	for {
		g.mu.Lock()
		k := len(g.queue)
		g.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d starts queued, want %d", k, n)
			return
		}
		runtime.Gosched()
	}
}

// startAll runs the starts at once, the first alone in a send held until
// the others wait in the queue, so that they go out together; then come
// the faults given, one a transaction.
func startAll(t *testing.T, ctx context.Context, tbl *Table, p *faultproxy.Proxy, starts []groupedStart, faults ...faultproxy.Fault) (rows []*ledger.Row, errs []error) {
	// The others set out only once the first one's transaction is on its
	// way, so that none of them can be the one sent alone.
	first := make(chan struct{})
	p.Inject("TransactWriteItems", 1, faultproxy.Before(func() {
		close(first)
		queued(t, ctx, len(starts)-1)
	}))
	for _, f := range faults {
		p.Inject("TransactWriteItems", 1, f)
	}
	rows, errs = make([]*ledger.Row, len(starts)), make([]error, len(starts))
	var wg sync.WaitGroup
	for i, s := range starts {
		wg.Go(func() {
			if i > 0 {
				<-first
			}
			rows[i], errs[i] = s.create(ctx, tbl)
		})
	}
	wg.Wait()
	return rows, errs
}

// TestGrouped: starts waiting at the same moment go out in one
// transaction, each answered as if it had gone alone: the start whose
// ledger row exists gets the row, the one whose trigger moved gets
// ErrTriggerMoved, and neither writes anything, while the others' writes
// are sent again without them and go in.
func TestGrouped(t *testing.T) {
	for _, b := range dynamotest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			direct, name := dynamotest.Table(t, b)
			tbl, grouped, p := throughProxy(t, b, name, 1)
			ctx := context.Background()
			starts := groupedStarts(t, New(direct, name), 5)
			standing := newRow(starts[1].key, "workspace_earlier", now.Add(24*time.Hour))
			if _, err := direct.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: EncodeLedger(standing)}); err != nil {
				t.Fatal(err)
			}
			if _, err := direct.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: triggerKey("trg_2"),
				UpdateExpression: aws.String("SET version = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": N(99)}}); err != nil {
				t.Fatal(err)
			}
			before := p.Count("TransactWriteItems")
			rows, errs := startAll(t, grouped, tbl, p, starts)
			for i, err := range errs {
				switch i {
				case 1:
					if !errors.Is(err, ErrLedgerExists) || rows[1] == nil || rows[1].SessionID != "workspace_earlier" {
						t.Errorf("the start whose row exists: %v, %+v", err, rows[1])
					}
				case 2:
					if !errors.Is(err, ErrTriggerMoved) {
						t.Errorf("the start whose trigger moved: %v", err)
					}
				default:
					if err != nil {
						t.Errorf("start %d: %v", i, err)
					}
				}
			}
			for i, s := range starts {
				_, err := New(direct, name).GetSession(ctx, s.id)
				if written := err == nil; written != (i != 1 && i != 2) {
					t.Errorf("session of start %d written: %v (%v)", i, written, err)
				}
			}
			// The first alone; the other four together, canceled by two of
			// them; the two others again, together.
			if got := p.Count("TransactWriteItems") - before; b.Name == dynamotest.Backends(t)[0].Name && got != 3 {
				t.Errorf("%d transactions, want 3", got)
			}
		})
	}
}

// TestGroupedFaults: a fault that the SDK gave up on is every grouped
// start's answer, and nothing is written; an answer that names no item
// and that no retry mends sends each start alone, so that it reaches only
// the start it is about.
func TestGroupedFaults(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	t.Run("throttled", func(t *testing.T) {
		direct, name := dynamotest.Table(t, b)
		tbl, ctx, p := throughProxy(t, b, name, 1, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		starts := groupedStarts(t, New(direct, name), 4)
		items := count(t, direct, name)
		_, errs := startAll(t, ctx, tbl, p, starts, faultproxy.DynamoThrottle)
		for i, err := range errs {
			if i == 0 && err != nil || i > 0 && problem.CodeOf(err) != problem.ServiceUnavailable {
				t.Errorf("start %d: %v", i, err)
			}
		}
		// The first start's session, row and run.
		if n := count(t, direct, name) - items; n != 3 {
			t.Errorf("%d items written, want 3", n)
		}
	})
	t.Run("refused whole", func(t *testing.T) {
		direct, name := dynamotest.Table(t, b)
		tbl, ctx, p := throughProxy(t, b, name, 1)
		starts := groupedStarts(t, New(direct, name), 4)
		before := p.Count("TransactWriteItems")
		_, errs := startAll(t, ctx, tbl, p, starts,
			faultproxy.Status(http.StatusBadRequest, "ValidationException", "Transaction request cannot include multiple operations on one item"))
		for i, err := range errs {
			if err != nil {
				t.Errorf("start %d: %v", i, err)
			}
		}
		// The first alone, the three together (refused), then each alone.
		if got := p.Count("TransactWriteItems") - before; got != 5 {
			t.Errorf("%d transactions, want 5", got)
		}
	})
}

// TestTakeBounds: a grouped transaction takes the waiting starts in
// order while they fit DynamoDB's 100 items and 4 MB, and a start too
// large for company goes alone; transactSize counts an item's names and
// values.
func TestTakeBounds(t *testing.T) {
	big := strings.Repeat("x", 1500<<10) // a start with a large snapshot
	start := func(pad string) *member {
		items := []types.TransactWriteItem{{Put: &types.Put{Item: Item{"PK": S("SESSION#a"), "SK": S("ENV_SNAPSHOT"), "pad": S(pad)}}}}
		for range 4 {
			items = append(items, types.TransactWriteItem{Put: &types.Put{Item: Item{"PK": S("SESSION#a"), "SK": S("METADATA")}}})
		}
		return &member{items: items, size: transactSize(items)}
	}
	g := &group{}
	for range 3 {
		g.queue = append(g.queue, start(big))
	}
	for range 25 {
		g.queue = append(g.queue, start(""))
	}
	var taken []int
	for len(g.queue) > 0 {
		taken = append(taken, len(g.take()))
	}
	// 2 large ones (3 MB: a third would pass 4 MB), then the third with 19
	// small ones (100 items), then the 6 left.
	if fmt.Sprint(taken) != "[2 20 6]" {
		t.Errorf("taken %v", taken)
	}
	if n := transactSize([]types.TransactWriteItem{{Put: &types.Put{Item: Item{"PK": S("ab"), "n": N(12), "m": M(Item{"k": S("v")})}}}}); n != 2+2+1+2+1+3+1+1 {
		t.Errorf("size %d", n)
	}
}
