package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// A webhook delivery's items, in its trigger's partition beside the
// runs: the marker of a delivery's operation key, TRIGGER#<id> /
// HOOK#<32 hex of the key's SHA-256>, kept as long as the run (RunTTL);
// and the trigger's counter of new starts in a minute, TRIGGER#<id> /
// RATE#<minute>, kept a few minutes.
const (
	hookPrefix = "HOOK#"
	ratePrefix = "RATE#"
	rateFormat = "2006-01-02T15:04Z"
	rateTTL    = 5 * time.Minute
)

// Errors of a delivery's writes.
var (
	// ErrRateLimited: the trigger has had its limit of new starts in the
	// minute.
	ErrRateLimited = errors.New("store: the trigger's deliveries are over the minute's limit")
)

// DeliveredError is a delivery whose operation key's marker stands: a
// start of the same key got there first, and Marker is what it recorded.
type DeliveredError struct{ Marker Marker }

func (e *DeliveredError) Error() string { return "store: the delivery's key has a run" }

// Marker is what a webhook delivery's operation key keeps of the start it
// first obtained, for a redelivery to answer: the session, or the refused
// start's problem, and the run it recorded.
type Marker struct {
	// SessionID is the session started; "" for a refused start.
	SessionID string
	// Error and Detail are a refused start's problem code and detail.
	Error, Detail string
	// Run is the run's key in the trigger's partition (RUN#…).
	Run string
}

func markerKey(triggerID, operationKey string) Item {
	sum := sha256.Sum256([]byte(operationKey))
	return key(triggerPrefix+triggerID, hookPrefix+hex.EncodeToString(sum[:16]))
}

func rateKey(triggerID string, minute time.Time) Item {
	return key(triggerPrefix+triggerID, ratePrefix+minute.UTC().Format(rateFormat))
}

// encodeMarker is a marker's item: sessionId? or error and detail, run,
// recordedAt and expiresAt (N, epoch seconds, RunTTL after it).
func encodeMarker(triggerID, operationKey string, m Marker, at time.Time) Item {
	item := markerKey(triggerID, operationKey)
	PutS(item, "sessionId", m.SessionID)
	PutS(item, "error", m.Error)
	PutS(item, "detail", m.Detail)
	item["run"] = S(m.Run)
	item["recordedAt"] = S(formatTime(at))
	item["expiresAt"] = N(at.Add(RunTTL).Unix())
	return item
}

// decodeMarker reads a marker's item: ok is false when it has expired by
// now (it counts as absent).
func decodeMarker(item Item, now time.Time) (m Marker, ok bool, err error) {
	var r AttrReader
	m = Marker{SessionID: r.Str(item, "", "sessionId"), Error: r.Str(item, "", "error"),
		Detail: r.Str(item, "", "detail"), Run: r.Str(item, "", "run")}
	expires := r.EpochSeconds(item, "", "expiresAt")
	if (m.SessionID == "") == (m.Error == "") {
		r.Fail("exactly one of sessionId and error is set")
	}
	if r.Err() != nil {
		return Marker{}, false, failed("read delivery", fmt.Errorf("marker: %w", r.Err()))
	}
	return m, expires.IsZero() || expires.After(now), nil
}

// DeliveryRead is what a delivery's first read found: the trigger (nil
// when there is none), the markers of the operation keys asked that
// stand, by key, and the trigger's new starts in the minute.
type DeliveryRead struct {
	Trigger *trigger.Trigger
	Markers map[string]Marker
	Started int
}

// ReadDelivery reads in one strongly consistent BatchGetItem what a
// webhook delivery to trigger id is judged on, as of now: the trigger,
// the markers of the operation keys the delivery may have (keys: one per
// verify mode, since the trigger's is not known yet), and the counter of
// now's minute.
func (t *Table) ReadDelivery(ctx context.Context, id string, keys []string, now time.Time) (*DeliveryRead, error) {
	byKey := map[string]string{} // operation key by its marker's sort key
	want := []Item{triggerKey(id), rateKey(id, now)}
	for _, k := range keys {
		mk := markerKey(id, k)
		if sk := mk["SK"].(*types.AttributeValueMemberS).Value; byKey[sk] == "" {
			byKey[sk] = k
			want = append(want, mk)
		}
	}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		t.name: {Keys: want, ConsistentRead: aws.Bool(true)},
	}}
	read := &DeliveryRead{Markers: map[string]Marker{}}
	for len(in.RequestItems) > 0 {
		out, err := t.client.BatchGetItem(ctx, in)
		if err != nil {
			return nil, failed("read delivery", err)
		}
		for _, item := range out.Responses[t.name] {
			if err := read.add(item, byKey, now); err != nil {
				return nil, err
			}
		}
		in.RequestItems = out.UnprocessedKeys
	}
	return read, nil
}

// add puts an item of the delivery's read in its place.
func (d *DeliveryRead) add(item Item, byKey map[string]string, now time.Time) error {
	sk, _ := item["SK"].(*types.AttributeValueMemberS)
	switch {
	case sk == nil:
		return failed("read delivery", errors.New("an item without its sort key"))
	case sk.Value == triggerSortKey:
		tr, err := decodeTrigger(item)
		d.Trigger = tr
		return err
	case byKey[sk.Value] != "":
		m, ok, err := decodeMarker(item, now)
		if ok {
			d.Markers[byKey[sk.Value]] = m
		}
		return err
	}
	var r AttrReader
	d.Started = int(r.Int(item, "", "count"))
	if r.Err() != nil {
		return failed("read delivery", fmt.Errorf("counter: %w", r.Err()))
	}
	return nil
}

// Delivery is what a webhook delivery's new session writes beside it, in
// its transaction: a check that the trigger is as it was seen
// (unchangedSince), its webhook run (keyed by the session's id, its
// session and status set), the trigger's counter of the minute moved on
// under the limit, and, for a delivery with an operation key, the key's
// marker where none stands. Nothing at all is written when one of them is
// refused: the trigger moved (ErrTriggerMoved, a conflict on any of them
// too: read again), the minute's limit is reached (ErrRateLimited), or
// the key's marker stands (a *DeliveredError with the marker).
type Delivery struct {
	Seen *trigger.Trigger
	// Run is the run without its session (trigger.Run.ForSession adds
	// it): kind webhook, its slot the receipt, status, delivery, event,
	// prompt, and its record's time.
	Run trigger.Run
	// Key is the delivery's operation key, "" for none (no marker).
	Key string
	// Limit is the most new starts of the trigger in a minute; Now is
	// when the delivery's writes are made (the minute counted, the run
	// recorded).
	Limit int
	Now   time.Time
}

func (d *Delivery) items(table string, rec *session.Record) []types.TransactWriteItem {
	run := d.Run.ForSession(rec)
	items := []types.TransactWriteItem{seenCheck(table, d.Seen), runPut(table, d.Seen.ID, run), rateItem(table, d.Seen.ID, d.Limit, d.Now)}
	if d.Key == "" {
		return items
	}
	return append(items, markerPut(table, d.Seen.ID, d.Key, Marker{SessionID: rec.SessionID, Run: runSortKey(run)}, d.Now))
}

func (d *Delivery) ran(rec *session.Record) (string, trigger.Run) {
	return d.Seen.ID, d.Run.ForSession(rec)
}

// refused reads the items from index from: check, run, counter, marker.
func (d *Delivery) refused(r refusal, from int) error {
	if d.Key != "" {
		if err := delivered(r, from+3, d.Now); err != nil {
			return err
		}
	}
	if r.on(from+2, condition) {
		return ErrRateLimited
	}
	return movedFrom(r, from)
}

// delivered is the refusal of a marker at index i: a *DeliveredError
// with the marker that stands, nil when the marker was not refused, and
// ErrTriggerMoved (read again) when what stands did not come back.
func delivered(r refusal, i int, now time.Time) error {
	if !r.on(i, condition) {
		return nil
	}
	if i < len(r.old) && len(r.old[i]) > 0 {
		if m, ok, err := decodeMarker(r.old[i], now); err == nil && ok {
			return &DeliveredError{Marker: m}
		}
	}
	return ErrTriggerMoved
}

// rateItem moves the trigger's counter of now's minute on by one, on the
// condition that it is under limit.
func rateItem(table, triggerID string, limit int, now time.Time) types.TransactWriteItem {
	var e expr
	n := e.name("count")
	update := "ADD " + n + " " + e.value("one", N(1)) + " " + set(e.assign("expiresAt", N(now.Truncate(time.Minute).Add(rateTTL).Unix())))
	cond := "attribute_not_exists(" + n + ") OR " + n + " < " + e.value("limit", N(int64(limit)))
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(table), Key: rateKey(triggerID, now),
		UpdateExpression: &update, ConditionExpression: &cond,
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
	}}
}

// markerPut writes a delivery key's marker where none stands (or the one
// that stands has expired), handing back the one that stands when its
// condition fails.
func markerPut(table, triggerID, operationKey string, m Marker, at time.Time) types.TransactWriteItem {
	var e expr
	cond := e.absentOrExpired(at)
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(table), Item: encodeMarker(triggerID, operationKey, m, at),
		ConditionExpression: &cond, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// PutFailedDelivery records a webhook delivery whose start was refused
// with the problem code and detail: its failed run (d.Run, with a fresh
// id) and, with an operation key, the key's marker, so that a redelivery
// answers the same refusal; the minute's counter is left as it is. It is
// written on the condition that the trigger is as seen: ErrTriggerMoved
// when it moved (or a conflict: read again), a *DeliveredError when the
// key's marker stands.
func (t *Table) PutFailedDelivery(ctx context.Context, d *Delivery, code, detail string) error {
	items := []types.TransactWriteItem{seenCheck(t.name, d.Seen), runPut(t.name, d.Seen.ID, d.Run)}
	if d.Key != "" {
		items = append(items, markerPut(t.name, d.Seen.ID, d.Key, Marker{Error: code, Detail: detail, Run: runSortKey(d.Run)}, d.Now))
	}
	_, err := t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return failedDeliveryError(err, d.Key != "", d.Now)
}

// failedDeliveryError maps the answer to a failed delivery's write
// (items: the check, the run, the marker when keyed).
func failedDeliveryError(err error, keyed bool, now time.Time) error {
	r := refusalOf(err)
	if err == nil {
		return nil
	}
	if keyed {
		if err := delivered(r, 2, now); err != nil {
			return err
		}
	}
	if err := movedFrom(r, 0); err != nil {
		return err
	}
	return r.fault("put failed delivery")
}
