package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cloud-agent/control-plane/infra/local/dynamotest"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/outcome"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// outcomeRuns writes 30 runs of trg_a, newest first by position: run i
// started i minutes before now. Completed at 3, 12, 13 and 25; failed at
// 5; a run that started nothing at 7; runs recorded before v7 (a session,
// not announced) at 20 to 24; the others announced and running.
func outcomeRuns(t *testing.T, c *dynamodb.Client, name string) []trigger.Run {
	t.Helper()
	runs := make([]trigger.Run, 30)
	for i := range runs {
		at := now.Add(-time.Duration(i) * time.Minute)
		run := trigger.Run{At: at, Status: trigger.StatusFired, SessionID: fmt.Sprintf("workspace_%d", i), RecordedAt: at, Announced: true}
		switch {
		case i == 3 || i == 12 || i == 13 || i == 25:
			run.Outcome = &outcome.Outcome{Status: outcome.Completed, EndedAt: at, ReportedAt: at, Revision: 1}
		case i == 5:
			run.Outcome = &outcome.Outcome{Status: outcome.Failed, Error: &outcome.Error{Code: "tests_failed", Message: "3 failed"}, EndedAt: at, ReportedAt: at, Revision: 2}
		case i == 7:
			run.SessionID, run.Status, run.Error, run.Announced = "", trigger.StatusFailed, "forbidden", false
		case i >= 20 && i <= 24:
			run.Announced = false
		}
		item := encodeRun("trg_a", run)
		if run.Outcome != nil { // as a report writes it
			item["outcome"] = encodeOutcome(run.Outcome)
		}
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(name), Item: item}); err != nil {
			t.Fatal(err)
		}
		runs[i] = run
	}
	return runs
}

// scanned is a client option that adds up the items each Query reads
// (its ScannedCount) into the last element of reads, one a call of mark.
func scanned(reads *[]int, mu *sync.Mutex) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("ScannedCount",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					if q, ok := out.Result.(*dynamodb.QueryOutput); ok {
						mu.Lock()
						(*reads)[len(*reads)-1] += int(q.ScannedCount)
						mu.Unlock()
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// TestListRunsByOutcome: with a filter, a page holds the runs it accepts,
// at most limit, reading at most FilteredReads × limit runs (the trigger's
// item aside); a page that reads its fill without filling up ends after
// the last run read, so that it may hold fewer, even none, with a
// position to go on from; running is the announced runs without an
// outcome, never a run recorded before v7 or one that started nothing.
func TestListRunsByOutcome(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	c, name := dynamotest.Table(t, b)
	var reads []int
	var mu sync.Mutex
	tbl := New(localdb.Client(b.URL, scanned(&reads, &mu)), name)
	ctx := context.Background()
	createDue(t, tbl)
	runs := outcomeRuns(t, c, name)
	pos := func(i int) RunPosition { return RunPosition(runSortKey(runs[i])) }
	type page struct {
		runs []int
		next RunPosition
	}
	for _, row := range []struct {
		rule   string
		filter string
		limit  int
		pages  []page
	}{
		{"a page reads at most ten runs a run it may hold, and goes on after the last read", outcome.Completed, 1,
			[]page{{[]int{3}, pos(9)}, {[]int{12}, pos(12)}, {[]int{13}, pos(22)}, {[]int{25}, ""}}},
		{"a page may hold none, with a position to go on from", outcome.Completed, 2,
			[]page{{[]int{3, 12}, pos(12)}, {[]int{13, 25}, ""}}},
		{"a page that reads its fill up to the last run cannot tell that none follow", outcome.Failed, 1,
			[]page{{[]int{5}, pos(9)}, {nil, pos(19)}, {nil, pos(29)}, {nil, ""}}},
		{"a page that reads the last run within its fill ends the list", outcome.TimedOut, 4, []page{{nil, ""}}},
		{"running: announced, without an outcome", trigger.Running, 100,
			[]page{{[]int{0, 1, 2, 4, 6, 8, 9, 10, 11, 14, 15, 16, 17, 18, 19, 26, 27, 28, 29}, ""}}},
	} {
		t.Run(row.rule, func(t *testing.T) {
			var after RunPosition
			keep := func(r trigger.Run) bool { return r.InOutcome(row.filter) }
			for n, want := range row.pages {
				reads = append(reads, 0)
				_, got, next, err := tbl.ListRuns(ctx, "trg_a", after, row.limit, keep, now.Add(time.Hour))
				var wantRuns []trigger.Run
				for _, i := range want.runs {
					wantRuns = append(wantRuns, runs[i])
				}
				if err != nil || next != want.next || !reflect.DeepEqual(got, wantRuns) {
					t.Fatalf("page %d: %+v, next %q (want %q): %v", n, got, next, want.next, err)
				}
				if max := FilteredReads*row.limit + 1; reads[len(reads)-1] > max {
					t.Errorf("page %d read %d items, over %d", n, reads[len(reads)-1], max)
				}
				after = next
			}
		})
	}
}

// TestSessionOutcomes: the outcomes of sessions, read together: a session
// without one, or that does not exist, is left out; one whose outcome
// does not decode is a fault that names it; a key DynamoDB leaves
// unprocessed is read again; a session named twice is read once.
func TestSessionOutcomes(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	c, name := dynamotest.Table(t, b)
	var batches [][]int // the keys of each BatchGetItem: asked, left unprocessed
	tbl := New(localdb.Client(b.URL, unprocessedOnce(&batches)), name)
	ctx := context.Background()
	ended := &outcome.Outcome{Status: outcome.Interrupted, Error: &outcome.Error{Code: "cancelled", Message: "Stopped."}, EndedAt: now, ReportedAt: now, Revision: 1}
	for id, o := range map[string]*outcome.Outcome{"workspace_a": ended, "workspace_b": nil, "workspace_c": ended} {
		rec := newRecord(id)
		rec.Outcome = o
		if err := tbl.PutSession(ctx, rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(name), Key: SessionKey("workspace_c"),
		UpdateExpression:          aws.String("SET metadata.outcome.#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": S("lost")}}); err != nil {
		t.Fatal(err)
	}
	found, invalid, err := tbl.SessionOutcomes(ctx, []string{"workspace_a", "workspace_b", "workspace_c", "workspace_none", "workspace_a"})
	if err != nil || len(found) != 1 || !reflect.DeepEqual(found["workspace_a"], ended) {
		t.Fatalf("%v: %v", found, err)
	}
	var broken *InvalidSessionError
	if len(invalid) != 1 || !errors.As(invalid[0], &broken) || broken.SessionID != "workspace_c" {
		t.Errorf("invalid %v", invalid)
	}
	if fmt.Sprint(batches) != "[[4 3] [3 0]]" {
		t.Errorf("batches (keys asked, left unprocessed): %v", batches)
	}
	if found, invalid, err := tbl.SessionOutcomes(ctx, nil); err != nil || len(found)+len(invalid) != 0 || len(batches) != 2 {
		t.Errorf("no session: %v %v %v, %d batches", found, invalid, err, len(batches))
	}
}

// unprocessedOnce is a client option under which the first BatchGetItem
// reads only its first key and answers the others as unprocessed, as
// DynamoDB may; it notes each BatchGetItem's keys and those left.
func unprocessedOnce(batches *[][]int) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("UnprocessedOnce",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					get, ok := in.Parameters.(*dynamodb.BatchGetItemInput)
					if !ok {
						return next.HandleInitialize(ctx, in)
					}
					var left types.KeysAndAttributes
					for table, ka := range get.RequestItems {
						if len(*batches) == 0 {
							left, ka.Keys = ka, ka.Keys[:1]
							left.Keys = left.Keys[1:]
						}
						*batches = append(*batches, []int{len(get.RequestItems[table].Keys), len(left.Keys)})
						get.RequestItems[table] = ka
						out, md, err := next.HandleInitialize(ctx, in)
						if res, ok := out.Result.(*dynamodb.BatchGetItemOutput); ok && len(left.Keys) > 0 {
							res.UnprocessedKeys = map[string]types.KeysAndAttributes{table: left}
						}
						return out, md, err
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	}
}

// TestUnprocessedKeysAgain: keys DynamoDB keeps leaving unprocessed (it is
// throttled) are read again batchTries times, then the read is
// service_unavailable, never a loop.
func TestUnprocessedKeysAgain(t *testing.T) {
	b := dynamotest.Backends(t)[0]
	_, name := dynamotest.Table(t, b)
	calls := 0
	tbl := New(localdb.Client(b.URL, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("AllUnprocessed",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					if get, ok := in.Parameters.(*dynamodb.BatchGetItemInput); ok {
						calls++
						out.Result.(*dynamodb.BatchGetItemOutput).UnprocessedKeys = get.RequestItems
					}
					return out, md, err
				}), middleware.After)
		})
	}), name)
	_, _, err := tbl.SessionOutcomes(context.Background(), []string{"workspace_a"})
	if problem.CodeOf(err) != problem.ServiceUnavailable || calls != 1+batchTries {
		t.Errorf("%v after %d reads", err, calls)
	}
}
