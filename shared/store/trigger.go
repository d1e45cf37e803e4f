package store

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// Trigger errors the caller acts on.
var (
	// ErrTriggerLimit: the owner already has the most triggers allowed.
	ErrTriggerLimit = errors.New("store: trigger limit reached")
	// ErrTriggerMoved: the trigger is gone, or it changed since it was
	// read (another invocation recorded its slot, say): read it again.
	ErrTriggerMoved = errors.New("store: trigger moved on")
)

// The trigger indexes of the table (template.yaml).
const (
	triggersByUser = "TriggersByUser"
	dueTriggers    = "DueTriggersAll"
	// dueShards is how many partitions of the due index active triggers
	// are spread over.
	dueShards = 16
)

// InvalidTriggerError is a stored trigger item that does not decode. Its
// owner is there when it can still be read ("" otherwise), so that only
// its owner learns of it.
type InvalidTriggerError struct {
	ID     string
	UserID string
	OrgID  string
	Cause  error
}

func (e *InvalidTriggerError) Error() string {
	return "trigger " + e.ID + " does not decode: " + e.Cause.Error()
}

func (e *InvalidTriggerError) Unwrap() error { return e.Cause }

// Trigger is the part of the invalid item that is still readable: its
// id and owner, enough to judge ownership and to delete it.
func (e *InvalidTriggerError) Trigger() *trigger.Trigger {
	return &trigger.Trigger{ID: e.ID, UserID: e.UserID, OrgID: e.OrgID}
}

// triggerItem is a trigger's item. dueShard is set only while the trigger
// is active, which keeps inactive triggers out of the due index.
type triggerItem struct {
	PK                       string       `dynamodbav:"PK"`
	SK                       string       `dynamodbav:"SK"`
	TriggerID                string       `dynamodbav:"triggerId"`
	OwnerUserID              string       `dynamodbav:"ownerUserId"`
	OrgID                    string       `dynamodbav:"orgId,omitempty"`
	Active                   bool         `dynamodbav:"active"`
	DueShard                 string       `dynamodbav:"dueShard,omitempty"`
	Cron                     string       `dynamodbav:"cron"`
	Timezone                 string       `dynamodbav:"timezone"`
	Repository               repoItem     `dynamodbav:"repository"`
	Agent                    agentItem    `dynamodbav:"agent"`
	Prompt                   string       `dynamodbav:"prompt"`
	SandboxAllocation        string       `dynamodbav:"sandboxAllocation,omitempty"`
	SandboxAllocationRequest *requestItem `dynamodbav:"sandboxAllocationRequest,omitempty"`
	CreatedAt                string       `dynamodbav:"createdAt"`
	ListedAt                 string       `dynamodbav:"listedAt"` // the creation instant, to the nanosecond, fixed width
	NextRunAt                string       `dynamodbav:"nextRunAt"`
	LastRunAt                string       `dynamodbav:"lastRunAt,omitempty"`
	LastSessionID            string       `dynamodbav:"lastSessionId,omitempty"`
	LastRunStatus            string       `dynamodbav:"lastRunStatus,omitempty"`
	LastError                string       `dynamodbav:"lastError,omitempty"`
	Version                  int64        `dynamodbav:"version,omitempty"`
}

type repoItem struct {
	Type   string `dynamodbav:"type"`
	Repo   string `dynamodbav:"repo,omitempty"`
	URL    string `dynamodbav:"url,omitempty"`
	Branch string `dynamodbav:"branch,omitempty"`
}

type agentItem struct {
	Mode    string `dynamodbav:"mode"`
	Model   string `dynamodbav:"model"`
	Variant string `dynamodbav:"variant,omitempty"`
}

type requestItem struct {
	Provider struct {
		ID      string `dynamodbav:"id"`
		Account string `dynamodbav:"account"`
	} `dynamodbav:"provider"`
	InstanceType string `dynamodbav:"instanceType"`
}

const (
	triggerPrefix  = "TRIGGER#"
	triggerSortKey = "TRIGGER"
)

func triggerKey(id string) session.Item {
	return session.Item{
		"PK": &types.AttributeValueMemberS{Value: triggerPrefix + id},
		"SK": &types.AttributeValueMemberS{Value: triggerSortKey},
	}
}

// dueShard spreads active triggers over the due index's partitions by a
// hash of their id.
func dueShard(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return shardKey(int(h.Sum32() % dueShards))
}

func shardKey(n int) string { return "DUE#" + strconv.Itoa(n) }

// listedAtFormat writes an instant to the nanosecond in fixed width, so
// that the order of the strings is the order of the instants.
const listedAtFormat = "2006-01-02T15:04:05.000000000Z"

func listedAt(t time.Time) string { return t.UTC().Format(listedAtFormat) }

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(session.TimeFormat)
}

func encodeTrigger(tr *trigger.Trigger) (session.Item, error) {
	it := triggerItem{
		PK: triggerPrefix + tr.ID, SK: triggerSortKey, TriggerID: tr.ID,
		OwnerUserID: tr.UserID, OrgID: tr.OrgID, Active: tr.Active,
		Cron: tr.Cron, Timezone: tr.Timezone,
		Repository: repoItem(tr.Repository), Agent: agentItem(tr.Agent), Prompt: tr.Prompt,
		SandboxAllocation: tr.SavedAllocation,
		CreatedAt:         formatTime(tr.CreatedAt), ListedAt: listedAt(tr.CreatedAt), NextRunAt: formatTime(tr.NextRunAt),
		LastRunAt: formatTime(tr.LastRun.At), LastSessionID: tr.LastRun.SessionID,
		LastRunStatus: tr.LastRun.Status, LastError: tr.LastRun.Error, Version: tr.Version,
	}
	if tr.Active {
		it.DueShard = dueShard(tr.ID)
	}
	if r := tr.SavedRequest; r != nil {
		it.SandboxAllocationRequest = &requestItem{InstanceType: r.InstanceType}
		it.SandboxAllocationRequest.Provider.ID = string(r.Provider.ID)
		it.SandboxAllocationRequest.Provider.Account = r.Provider.Account
	}
	return attributevalue.MarshalMap(it)
}

// decodeTrigger reads a trigger item; its id is the key's.
func decodeTrigger(item session.Item) (*trigger.Trigger, error) {
	str := func(name string) string {
		v, _ := item[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	id := strings.TrimPrefix(str("PK"), triggerPrefix)
	invalid := func(cause error) error {
		return &InvalidTriggerError{ID: id, UserID: str("ownerUserId"), OrgID: str("orgId"), Cause: cause}
	}
	var it triggerItem
	if err := unmarshalExact(item, reflect.ValueOf(&it).Elem(), ""); err != nil {
		return nil, invalid(err)
	}
	if it.TriggerID != id || it.OwnerUserID == "" {
		return nil, invalid(errors.New("triggerId differs from the key, or ownerUserId is missing"))
	}
	tr := &trigger.Trigger{
		ID: id, UserID: it.OwnerUserID, OrgID: it.OrgID, Active: it.Active,
		Cron: it.Cron, Timezone: it.Timezone,
		Repository: session.Repository(it.Repository), Agent: session.Agent(it.Agent), Prompt: it.Prompt,
		SavedAllocation: it.SandboxAllocation,
		LastRun:         trigger.Run{SessionID: it.LastSessionID, Status: it.LastRunStatus, Error: it.LastError},
		Version:         it.Version,
	}
	if r := it.SandboxAllocationRequest; r != nil {
		tr.SavedRequest = &allocation.Request{
			Provider:     allocation.RequestProvider{ID: allocation.Provider(r.Provider.ID), Account: r.Provider.Account},
			InstanceType: r.InstanceType,
		}
	}
	// Reasons name the attribute, never its stored value.
	var err error
	parse := func(name, s, layout string) time.Time {
		t, perr := time.Parse(layout, s)
		if s != "" && perr != nil && err == nil {
			err = errors.New(name + " is not a time")
		}
		return t
	}
	tr.CreatedAt = parse("createdAt", it.CreatedAt, session.TimeFormat)
	tr.NextRunAt = parse("nextRunAt", it.NextRunAt, session.TimeFormat)
	tr.LastRun.At = parse("lastRunAt", it.LastRunAt, session.TimeFormat)
	if it.ListedAt != "" {
		tr.CreatedAt = parse("listedAt", it.ListedAt, listedAtFormat)
	}
	if err != nil {
		return nil, invalid(err)
	}
	return tr, nil
}

// unmarshalExact decodes item into the struct v attribute by attribute,
// each field from the attribute its dynamodbav tag names, exactly; a
// struct field (or a pointer to one) from a map, by the same rule.
// attributevalue.UnmarshalMap also matches names that differ in case
// (Prompt for prompt), and of two such takes either. Other attributes are
// ignored; a value of another type is an error naming the attribute's
// path, never its value.
func unmarshalExact(item session.Item, v reflect.Value, path string) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
		av, ok := item[name]
		if !ok {
			continue
		}
		fv := v.Field(i)
		if m, isMap := av.(*types.AttributeValueMemberM); isMap && isStruct(f.Type) {
			if f.Type.Kind() == reflect.Pointer {
				fv.Set(reflect.New(f.Type.Elem()))
				fv = fv.Elem()
			}
			if err := unmarshalExact(m.Value, fv, path+name+"."); err != nil {
				return err
			}
			continue
		}
		if err := valueDecoder.Decode(av, fv.Addr().Interface()); err != nil {
			return fmt.Errorf("%s%s is not %s", path, name, attributeType(f.Type))
		}
	}
	return nil
}

// valueDecoder decodes the attributes of unmarshalExact one by one.
var valueDecoder = attributevalue.NewDecoder()

func isStruct(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

// attributeType names the attribute type a field of triggerItem reads.
func attributeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int64:
		return "an integer"
	}
	return "a map"
}

// ownerCountKey is the item that counts an owner's triggers: the org's
// when the trigger has one, else the user's.
func ownerCountKey(tr *trigger.Trigger) session.Item {
	owner := "USER#" + tr.UserID
	if tr.OrgID != "" {
		owner = "ORG#" + tr.OrgID
	}
	return session.Item{
		"PK": &types.AttributeValueMemberS{Value: "TRIGGERS#" + owner},
		"SK": &types.AttributeValueMemberS{Value: "COUNT"},
	}
}

// CreateTrigger writes a new trigger, at version 1, and counts it against
// its owner, in one transaction: when the owner already has limit
// triggers, nothing is written and the error is ErrTriggerLimit.
func (t *Table) CreateTrigger(ctx context.Context, tr *trigger.Trigger, limit int) error {
	first := *tr
	first.Version = 1
	item, err := encodeTrigger(&first)
	if err != nil {
		return err
	}
	count := expression.Name("triggers")
	upd, err := expression.NewBuilder().
		WithUpdate(expression.Set(count, expression.Plus(expression.IfNotExists(count, expression.Value(0)), expression.Value(1)))).
		WithCondition(expression.AttributeNotExists(count).Or(count.LessThan(expression.Value(limit)))).
		Build()
	if err != nil {
		return err
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(t.name), Item: item, ConditionExpression: aws.String(sessionIsNew)}},
			{Update: &types.Update{
				TableName: aws.String(t.name), Key: ownerCountKey(tr),
				UpdateExpression: upd.Update(), ConditionExpression: upd.Condition(),
				ExpressionAttributeNames: upd.Names(), ExpressionAttributeValues: upd.Values(),
			}},
		},
	})
	var tce *types.TransactionCanceledException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tce) && reason(tce, 0) == "ConditionalCheckFailed":
		// The id is new and random: only an earlier attempt of this write,
		// whose answer was lost, can have taken it.
		if stored, gerr := t.GetTrigger(ctx, tr.ID); gerr == nil && stored.UserID == tr.UserID && stored.CreatedAt.Equal(tr.CreatedAt) {
			return nil
		}
	case errors.As(err, &tce) && reason(tce, 1) == "ConditionalCheckFailed":
		return ErrTriggerLimit
	}
	return countError("create trigger", err)
}

// countError maps a refused transaction on an owner's trigger count: two
// writes for one owner at once conflict on real DynamoDB, and a throttled
// one may pass later; both are service_unavailable.
func countError(op string, err error) error {
	var tce *types.TransactionCanceledException
	var conflict *types.TransactionConflictException
	if errors.As(err, &conflict) || errors.As(err, &tce) && (transient(tce) || reason(tce, 0) == "TransactionConflict" || reason(tce, 1) == "TransactionConflict") {
		return errBusy(fmt.Errorf("%s: %w", op, err))
	}
	return failed(op, err)
}

// GetTrigger reads a trigger, strongly consistent.
func (t *Table) GetTrigger(ctx context.Context, id string) (*trigger.Trigger, error) {
	item, err := t.get(ctx, triggerKey(id))
	if err != nil {
		return nil, err
	}
	return decodeTrigger(item)
}

// DeleteTrigger deletes a trigger and uncounts it from its owner, in one
// transaction; ErrNotFound when it is already gone.
func (t *Table) DeleteTrigger(ctx context.Context, tr *trigger.Trigger) error {
	// A count that was never written (a trigger put in by other means)
	// goes to 0, never below.
	count := expression.Name("triggers")
	upd, err := expression.NewBuilder().
		WithUpdate(expression.Set(count, expression.Minus(expression.IfNotExists(count, expression.Value(1)), expression.Value(1)))).
		Build()
	if err != nil {
		return err
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: aws.String(t.name), Key: triggerKey(tr.ID), ConditionExpression: aws.String("attribute_exists(PK)")}},
			{Update: &types.Update{
				TableName: aws.String(t.name), Key: ownerCountKey(tr),
				UpdateExpression: upd.Update(), ExpressionAttributeNames: upd.Names(), ExpressionAttributeValues: upd.Values(),
			}},
		},
	})
	var tce *types.TransactionCanceledException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tce) && reason(tce, 0) == "ConditionalCheckFailed":
		return ErrNotFound
	}
	return countError("delete trigger", err)
}

// ListTriggers returns up to limit of a user's triggers that keep accepts,
// newest first, after the position (nil: from the start). more says
// whether further accepted triggers follow. The index is eventually
// consistent: a trigger created a moment ago may show only a moment later.
func (t *Table) ListTriggers(ctx context.Context, userID string, after *trigger.Position, limit int, keep func(*trigger.Trigger) bool) (page []*trigger.Trigger, more bool, err error) {
	kc, err := expression.NewBuilder().WithKeyCondition(expression.Key("ownerUserId").Equal(expression.Value(userID))).Build()
	if err != nil {
		return nil, false, err
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), IndexName: aws.String(triggersByUser),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(int32(limit + 1)),
	}
	if after != nil {
		in.ExclusiveStartKey = triggerKey(after.ID)
		in.ExclusiveStartKey["ownerUserId"] = &types.AttributeValueMemberS{Value: userID}
		in.ExclusiveStartKey["listedAt"] = &types.AttributeValueMemberS{Value: listedAt(after.CreatedAt)}
	}
	for {
		out, err := t.client.Query(ctx, in)
		if err != nil {
			return nil, false, failed("list triggers", err)
		}
		for _, item := range out.Items {
			tr, err := decodeTrigger(item)
			var invalid *InvalidTriggerError
			switch {
			case errors.As(err, &invalid) && !keep(invalid.Trigger()):
				continue // not the caller's: it does not exist for them
			case err != nil:
				return nil, false, err
			case !keep(tr):
				continue
			}
			if len(page) == limit {
				return page, true, nil
			}
			page = append(page, tr)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Due is a trigger the due index shows due: its id, and the trigger as
// the index has it (nil when that copy does not decode). The index is
// eventually consistent: judge the copy only by writes conditioned on it
// (unchangedSince), or read the trigger again.
type Due struct {
	ID      string
	Trigger *trigger.Trigger
}

// DueTriggers returns the active triggers whose next run is at or before
// at, as the due index has them, longest due first. The shards are
// queried in parallel, each page by page.
func (t *Table) DueTriggers(ctx context.Context, at time.Time) ([]Due, error) {
	found := make([][]Due, dueShards)
	errs := make([]error, dueShards)
	var wg sync.WaitGroup
	for shard := range dueShards {
		wg.Go(func() { found[shard], errs[shard] = t.dueInShard(ctx, shard, at) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	due := slices.Concat(found...)
	slices.SortStableFunc(due, func(a, b Due) int { return a.nextRunAt().Compare(b.nextRunAt()) })
	return due, nil
}

// nextRunAt is the next run the index shows; zero for a copy that does
// not decode, which then comes first, to be read again and judged early.
func (d Due) nextRunAt() time.Time {
	if d.Trigger == nil {
		return time.Time{}
	}
	return d.Trigger.NextRunAt
}

// dueInShard is one shard's due triggers, in the order of their next run.
func (t *Table) dueInShard(ctx context.Context, shard int, at time.Time) ([]Due, error) {
	kc, err := expression.NewBuilder().WithKeyCondition(
		expression.Key("dueShard").Equal(expression.Value(shardKey(shard))).
			And(expression.Key("nextRunAt").LessThanEqual(expression.Value(formatTime(at))))).Build()
	if err != nil {
		return nil, err
	}
	p := dynamodb.NewQueryPaginator(t.client, &dynamodb.QueryInput{
		TableName: aws.String(t.name), IndexName: aws.String(dueTriggers),
		KeyConditionExpression: kc.KeyCondition(), ExpressionAttributeNames: kc.Names(), ExpressionAttributeValues: kc.Values(),
	})
	var due []Due
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, failed("find due triggers", err)
		}
		for _, item := range out.Items {
			tr, err := decodeTrigger(item)
			var invalid *InvalidTriggerError
			switch {
			case errors.As(err, &invalid):
				due = append(due, Due{ID: invalid.ID})
			case err == nil:
				due = append(due, Due{ID: tr.ID, Trigger: tr})
			}
		}
	}
	return due, nil
}

// unchangedSince is the condition that a trigger is still as it was read:
// there, with the same active flag, next run and version.
func unchangedSince(tr *trigger.Trigger) expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name("PK")).
		And(expression.Name("active").Equal(expression.Value(tr.Active))).
		And(unchanged("nextRunAt", formatTime(tr.NextRunAt))).
		And(versionIs(tr.Version))
}

// versionIs is the condition that a trigger's version is still v (0: an
// older writer's item, which has none).
func versionIs(v int64) expression.ConditionBuilder {
	if v == 0 {
		return unchanged("version", nil)
	}
	return unchanged("version", v)
}

// runUpdate records what a slot did and the next slot, and moves the
// version on. An unset value is written NULL, which reads back as unset.
func runUpdate(run trigger.Run, next time.Time) expression.UpdateBuilder {
	set := func(u expression.UpdateBuilder, name, v string) expression.UpdateBuilder {
		if v == "" {
			return u.Set(expression.Name(name), expression.Value(nil))
		}
		return u.Set(expression.Name(name), expression.Value(v))
	}
	version := expression.Name("version")
	u := expression.Set(expression.Name("nextRunAt"), expression.Value(formatTime(next))).
		Set(version, expression.Plus(expression.IfNotExists(version, expression.Value(0)), expression.Value(1)))
	u = set(u, "lastRunAt", formatTime(run.At))
	u = set(u, "lastSessionId", run.SessionID)
	u = set(u, "lastRunStatus", run.Status)
	return set(u, "lastError", run.Error)
}

// Advance moves a trigger past a slot whose new session is written with
// it, in the session's own transaction: it records the slot, the session,
// the status and the next slot, on the condition that the trigger is
// still as it was seen (unchangedSince), and adds the slot's run to the
// trigger's history. When that condition fails nothing at all is written,
// and the error is ErrTriggerMoved.
type Advance struct {
	Seen   *trigger.Trigger
	Slot   time.Time
	Status string // fired or fallback
	Next   time.Time
	At     time.Time // when the run is recorded
}

// items are the advance as transaction items, for the session id: the
// trigger's update, then its run.
func (a *Advance) items(table, sessionID string) ([]types.TransactWriteItem, error) {
	run := trigger.Run{At: a.Slot, SessionID: sessionID, Status: a.Status, RecordedAt: a.At}
	update, err := runUpdateItem(table, a.Seen, run, a.Next)
	if err != nil {
		return nil, err
	}
	put, err := runPut(table, a.Seen.ID, run)
	return []types.TransactWriteItem{update, put}, err
}

// runUpdateItem is the update that records a run on the trigger seen and
// moves its next slot on, conditioned on the trigger being as seen.
func runUpdateItem(table string, seen *trigger.Trigger, run trigger.Run, next time.Time) (types.TransactWriteItem, error) {
	e, err := expression.NewBuilder().WithUpdate(runUpdate(run, next)).WithCondition(unchangedSince(seen)).Build()
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(table), Key: triggerKey(seen.ID),
		UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
		ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
	}}, nil
}

// RecordRun records what a trigger's slot did and moves its next run on,
// on the condition that the trigger is still as it was seen
// (unchangedSince): never backward, never onto a deleted or changed
// trigger. The slot's run goes into the trigger's history in the same
// transaction: a slot has one run item, so recording it again (a replay
// of a slot an older writer fired, which recorded no run) adds none. When
// the condition fails the error is ErrTriggerMoved.
func (t *Table) RecordRun(ctx context.Context, seen *trigger.Trigger, run trigger.Run, next time.Time) error {
	update, err := runUpdateItem(t.name, seen, run, next)
	if err != nil {
		return err
	}
	put, err := runPut(t.name, seen.ID, run)
	if err != nil {
		return err
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{update, put}})
	return moved("record trigger run", err)
}

// moved maps the answer to a write conditioned on a trigger as it was
// seen, alone or in a transaction: a failed condition means the trigger
// moved, and so does a conflict (a transaction in flight on it: another
// invocation's advance, a change), on any of the items; a throttled
// transaction is service_unavailable; anything else a fault.
func moved(op string, err error) error {
	var ccf *types.ConditionalCheckFailedException
	var conflict *types.TransactionConflictException
	var tce *types.TransactionCanceledException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf) || errors.As(err, &conflict):
		return ErrTriggerMoved
	case errors.As(err, &tce) && refusedFrom(tce, 0):
		return ErrTriggerMoved
	case errors.As(err, &tce) && transient(tce):
		return errBusy(fmt.Errorf("%s: %w", op, err))
	}
	return failed(op, err)
}

// refusedFrom reports whether an item of a canceled transaction, from
// index from on, failed its condition or met another transaction.
func refusedFrom(tce *types.TransactionCanceledException, from int) bool {
	for i := from; i < len(tce.CancellationReasons); i++ {
		if r := reason(tce, i); r == "ConditionalCheckFailed" || r == "TransactionConflict" {
			return true
		}
	}
	return false
}

// UpdateTrigger writes a change of a trigger (changed, the trigger seen
// with the change applied), with its version moved on, on the condition
// that the trigger is still as it was seen (unchangedSince). The due
// index follows its active flag. When the condition fails nothing is
// written and the error is ErrTriggerMoved.
func (t *Table) UpdateTrigger(ctx context.Context, seen, changed *trigger.Trigger) error {
	next := *changed
	next.Version = seen.Version + 1
	item, err := encodeTrigger(&next)
	if err != nil {
		return err
	}
	cond, err := expression.NewBuilder().WithCondition(unchangedSince(seen)).Build()
	if err != nil {
		return err
	}
	_, err = t.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(t.name), Item: item, ConditionExpression: cond.Condition(),
		ExpressionAttributeNames: cond.Names(), ExpressionAttributeValues: cond.Values(),
	})
	if err = moved("update trigger", err); err == nil {
		changed.Version = next.Version
	}
	return err
}

// Park stops a trigger that cannot fire (its item does not decode, or its
// schedule no longer parses: a retry cannot mend either): it becomes
// inactive, leaves the due index, and records its slot as failed with
// code. It stays listed, and can be deleted, or mended by a change.
//
// A trigger that decoded (seen) is parked on the condition that it is
// still as seen (ErrTriggerMoved when it is not: a change may have mended
// it), its version moved on, and its slot, its next run, goes into its
// history, failed, in the same transaction. One that does not decode is
// parked as long as it exists, its version left as it is (the version may
// be what does not decode), with no run: its slot is not known.
func (t *Table) Park(ctx context.Context, id, code string, seen *trigger.Trigger, at time.Time) error {
	stop := expression.Set(expression.Name("active"), expression.Value(false)).
		Set(expression.Name("lastRunStatus"), expression.Value(trigger.StatusFailed)).
		Set(expression.Name("lastError"), expression.Value(code)).
		Remove(expression.Name("dueShard"))
	if seen == nil {
		e, err := expression.NewBuilder().WithUpdate(stop).WithCondition(expression.AttributeExists(expression.Name("PK"))).Build()
		if err != nil {
			return err
		}
		_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(t.name), Key: triggerKey(id),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		})
		var ccf *types.ConditionalCheckFailedException
		var conflict *types.TransactionConflictException
		switch {
		case errors.As(err, &ccf):
			return nil // deleted since: nothing to stop
		case errors.As(err, &conflict):
			return errBusy(fmt.Errorf("park trigger: %w", err))
		case err != nil:
			return failed("park trigger", err)
		}
		return nil
	}
	run := trigger.Run{At: seen.NextRunAt, Status: trigger.StatusFailed, Error: code, RecordedAt: at}
	version := expression.Name("version")
	stop = stop.Set(expression.Name("lastRunAt"), expression.Value(formatTime(run.At))).
		Set(expression.Name("lastSessionId"), expression.Value(nil)).
		Set(version, expression.Plus(expression.IfNotExists(version, expression.Value(0)), expression.Value(1)))
	e, err := expression.NewBuilder().WithUpdate(stop).WithCondition(unchangedSince(seen)).Build()
	if err != nil {
		return err
	}
	put, err := runPut(t.name, id, run)
	if err != nil {
		return err
	}
	_, err = t.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: aws.String(t.name), Key: triggerKey(id),
			UpdateExpression: e.Update(), ConditionExpression: e.Condition(),
			ExpressionAttributeNames: e.Names(), ExpressionAttributeValues: e.Values(),
		}},
		put,
	}})
	return moved("park trigger", err)
}
