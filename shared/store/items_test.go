package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/shared/ledger"
	"github.com/cloud-agent/control-plane/shared/problem"
	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// goodItems are an item of each kind the store reads, as the current
// writer stores it, with the decoder of its kind.
func goodItems() map[string]struct {
	item   Item
	decode func(Item) (any, error)
} {
	rec := newRecord("workspace_a")
	rec.Agent, rec.Repository = session.Agent{Mode: "code", Model: "anthropic/claude"}, session.Repository{Type: "github", Repo: "acme/app"}
	tr := newTrigger("trg_a", "u1", "o1", now)
	tr.LastRun = trigger.Run{At: now, SessionID: "workspace_a", Status: trigger.StatusFired}
	return map[string]struct {
		item   Item
		decode func(Item) (any, error)
	}{
		"session": {EncodeSession(rec), func(it Item) (any, error) { return DecodeSession(it) }},
		"ledger":  {EncodeLedger(newRow("k", "workspace_a", now)), func(it Item) (any, error) { return DecodeLedger(it) }},
		"trigger": {encodeTrigger(tr), func(it Item) (any, error) { return decodeTrigger(it) }},
		"run": {encodeRun("trg_a", trigger.Run{At: now, SessionID: "workspace_a", Status: trigger.StatusFired, RecordedAt: now}),
			func(it Item) (any, error) { return decodeRun(it) }},
		"webhook trigger": {encodeTrigger(newWebhookTrigger("trg_w", "u1", now)), func(it Item) (any, error) { return decodeTrigger(it) }},
		"webhook run": {encodeRun("trg_w", trigger.Run{Kind: trigger.KindWebhook, ID: "workspace_a", At: now, SessionID: "workspace_a",
			Status: trigger.StatusFired, RecordedAt: now, Delivery: "d1", Event: "push", Prompt: "Go.", PromptLength: 3}),
			func(it Item) (any, error) { return decodeRun(it) }},
		"delivery marker": {encodeMarker("trg_w", "trigger:trg_w:hook:0123", Marker{SessionID: "workspace_a", Run: "RUN#1"}, now),
			func(it Item) (any, error) { m, _, err := decodeMarker(it, now); return m, err }},
	}
}

// changed is item with the attribute at path (dot-separated) set to v, or
// renamed to rename when rename is not "", the maps on the way copied.
func changed(item Item, path string, v types.AttributeValue, rename string) Item {
	out := maps.Clone(item)
	parent := out
	names := strings.Split(path, ".")
	for _, name := range names[:len(names)-1] {
		inner := maps.Clone(parent[name].(*types.AttributeValueMemberM).Value)
		parent[name] = M(inner)
		parent = inner
	}
	last := names[len(names)-1]
	if rename != "" {
		parent[rename] = parent[last]
		delete(parent, last)
		return out
	}
	parent[last] = v
	return out
}

// TestStrictItems: every kind of item is read by one strict rule. A name
// that differs in case is another attribute, not read; a value of the
// wrong type makes the item invalid, and the error names the attribute's
// path, never the value; NULL is unset. An empty string is unset where a
// string is read, and, in sessions and ledger rows (the contract's rule
// for session records), wherever it stands; in triggers and runs, only
// this code's items, it is of the wrong type where a flag, a number or a
// map is read.
func TestStrictItems(t *testing.T) {
	const secret = "next tuesday 987654321"
	null := &types.AttributeValueMemberNULL{Value: true}
	wrongS, wrongN, wrongBool := S(secret), &types.AttributeValueMemberN{Value: "987654321"}, Bool(true)
	empty := S("")
	rec := func(v any) *session.Record { return v.(*session.Record) }
	row := func(v any) *ledger.Row { return v.(*ledger.Row) }
	trg := func(v any) *trigger.Trigger { return v.(*trigger.Trigger) }
	run := func(v any) trigger.Run { return v.(trigger.Run) }
	for _, r := range []struct {
		kind, rule string
		path       string
		set        types.AttributeValue
		rename     string
		// read is what the decoded item holds, want what it should;
		// invalid: the item does not decode, and says path.
		read    func(any) string
		want    string
		invalid bool
	}{
		{kind: "session", rule: "Model is not model", path: "metadata.agent.model", rename: "Model", read: func(v any) string { return rec(v).Agent.Model }, want: ""},
		{kind: "session", rule: "a number for a string", path: "metadata.agent.model", set: wrongN, invalid: true},
		{kind: "session", rule: "a flag for a map", path: "metadata.repository", set: wrongBool, invalid: true},
		{kind: "session", rule: "NULL is unset", path: "metadata.agent.model", set: null, read: func(v any) string { return rec(v).Agent.Model }, want: ""},
		{kind: "session", rule: `"" for a map is unset`, path: "metadata.repository", set: empty, read: func(v any) string { return rec(v).Repository.Type }, want: ""},
		{kind: "session", rule: `"" for a number is unset`, path: "metadata.lifecycle.timestamp", set: empty, read: func(v any) string { return fmt.Sprint(rec(v).CreatedAt.IsZero()) }, want: "true"},

		{kind: "ledger", rule: "Fingerprint is not fingerprint", path: "fingerprint", rename: "Fingerprint", read: func(v any) string { return row(v).Fingerprint }, want: ""},
		{kind: "ledger", rule: "a string for a number", path: "expiresAt", set: wrongS, invalid: true},
		{kind: "ledger", rule: "a map for a string", path: "status", set: M(Item{"x": wrongS}), invalid: true},
		{kind: "ledger", rule: "NULL is unset", path: "intent", set: null, read: func(v any) string { return row(v).Intent }, want: ""},
		{kind: "ledger", rule: `"" for a number is unset`, path: "leaseUntil", set: empty, read: func(v any) string { return fmt.Sprint(row(v).LeaseUntil.IsZero()) }, want: "true"},

		{kind: "trigger", rule: "Prompt is not prompt", path: "prompt", rename: "Prompt", read: func(v any) string { return trg(v).Prompt }, want: ""},
		{kind: "trigger", rule: "in a map, Repo is not repo", path: "repository.repo", rename: "Repo", read: func(v any) string { return trg(v).Repository.Repo }, want: ""},
		{kind: "trigger", rule: "a number for a string", path: "repository.type", set: wrongN, invalid: true},
		{kind: "trigger", rule: "a string for a flag", path: "active", set: wrongS, invalid: true},
		{kind: "trigger", rule: "a string for a number", path: "version", set: wrongS, invalid: true},
		{kind: "trigger", rule: "a time that is none", path: "nextRunAt", set: wrongS, invalid: true},
		{kind: "trigger", rule: "NULL is unset", path: "lastSessionId", set: null, read: func(v any) string { return trg(v).LastRun.SessionID }, want: ""},
		{kind: "trigger", rule: "a NULL flag is false", path: "active", set: null, read: func(v any) string { return fmt.Sprint(trg(v).Active) }, want: "false"},
		{kind: "trigger", rule: `"" for a string is unset`, path: "prompt", set: empty, read: func(v any) string { return trg(v).Prompt }, want: ""},
		{kind: "trigger", rule: `"" for a flag is of the wrong type`, path: "active", set: empty, invalid: true},
		{kind: "trigger", rule: `"" for a map is of the wrong type`, path: "agent", set: empty, invalid: true},

		{kind: "webhook trigger", rule: "Verify is not verify", path: "webhook.verify", rename: "Verify", invalid: true},
		{kind: "webhook trigger", rule: "an unknown verify mode", path: "webhook.verify", set: S("hmac"), invalid: true},
		{kind: "webhook trigger", rule: "a string for a list", path: "webhook.events", set: wrongS, invalid: true},
		{kind: "webhook trigger", rule: "a number in the list", path: "webhook.events", set: &types.AttributeValueMemberL{Value: []types.AttributeValue{wrongN}}, invalid: true},
		{kind: "webhook trigger", rule: "NULL events are every event", path: "webhook.events", set: null, read: func(v any) string { return fmt.Sprint(trg(v).Webhook.Events == nil) }, want: "true"},
		{kind: "webhook trigger", rule: "an empty list is no event", path: "webhook.events", set: L(nil), read: func(v any) string { return fmt.Sprint(trg(v).Webhook.Events != nil, len(trg(v).Webhook.Events)) }, want: "true 0"},
		{kind: "webhook trigger", rule: "no secret", path: "webhook.secret", set: null, invalid: true},
		{kind: "webhook trigger", rule: "a string for a version", path: "webhook.secret.version", set: wrongS, invalid: true},
		{kind: "webhook trigger", rule: "a sealed secret with a version is imported", path: "webhook.secret.sealed", set: &types.AttributeValueMemberB{Value: []byte("x")}, read: func(v any) string {
			w := trg(v).Webhook.Secret
			return fmt.Sprint(string(w.Sealed), " ", w.Version > 0)
		}, want: "x true"},
		{kind: "webhook trigger", rule: "a generated secret of version 0", path: "webhook.secret.version", set: N(0), invalid: true},
		{kind: "webhook trigger", rule: "a string for sealed bytes", path: "webhook.previous.sealed", set: wrongS, invalid: true},
		{kind: "webhook trigger", rule: "a previous secret neither generated nor sealed", path: "webhook.previous.version", set: null, invalid: true},
		{kind: "webhook trigger", rule: "a webhook trigger with a schedule", path: "cron", set: S("* * * * *"), invalid: true},
		{kind: "webhook trigger", rule: "a webhook trigger in the due index", path: "dueShard", set: S("DUE#1"), invalid: true},
		{kind: "webhook trigger", rule: "NULL header is none", path: "webhook.header", set: null, read: func(v any) string { return trg(v).Webhook.Header }, want: ""},

		{kind: "webhook run", rule: "a string for a length", path: "promptLength", set: wrongS, invalid: true},
		{kind: "webhook run", rule: "NULL delivery is none", path: "delivery", set: null, read: func(v any) string { return run(v).Delivery }, want: ""},
		{kind: "webhook run", rule: "no runId", path: "runId", set: null, invalid: true},

		{kind: "delivery marker", rule: "a number for a session id", path: "sessionId", set: wrongN, invalid: true},
		{kind: "delivery marker", rule: "neither a session nor an error", path: "sessionId", set: null, invalid: true},
		{kind: "delivery marker", rule: "both a session and an error", path: "error", set: S("sandbox_allocation_retired"), invalid: true},
		{kind: "delivery marker", rule: "a string for expiresAt", path: "expiresAt", set: wrongS, invalid: true},

		{kind: "run", rule: "Status is not status", path: "status", rename: "Status", read: func(v any) string { return run(v).Status }, want: ""},
		{kind: "run", rule: "a number for a string", path: "status", set: wrongN, invalid: true},
		{kind: "run", rule: "a string for a number", path: "expiresAt", set: wrongS, invalid: true},
		{kind: "run", rule: "a time that is none", path: "recordedAt", set: wrongS, invalid: true},
		{kind: "run", rule: "NULL is unset", path: "sessionId", set: null, read: func(v any) string { return run(v).SessionID }, want: ""},
		{kind: "run", rule: `"" for a number is of the wrong type`, path: "expiresAt", set: empty, invalid: true},
	} {
		t.Run(r.kind+": "+r.rule, func(t *testing.T) {
			good := goodItems()[r.kind]
			for range 10 { // the order of a map must not matter
				v, err := good.decode(changed(good.item, r.path, r.set, r.rename))
				switch {
				case r.invalid && err == nil:
					t.Fatalf("decoded: %+v", v)
				case r.invalid && (!strings.Contains(err.Error(), r.path) || strings.Contains(err.Error(), "987654321")):
					t.Fatalf("the error does not name %s, or shows the value: %v", r.path, err)
				case r.invalid:
				case err != nil:
					t.Fatal(err)
				case r.read(v) != r.want:
					t.Fatalf("read %q, want %q", r.read(v), r.want)
				}
			}
		})
	}
	t.Run("every kind decodes as written", func(t *testing.T) {
		for kind, good := range goodItems() {
			if _, err := good.decode(good.item); err != nil {
				t.Errorf("%s: %v", kind, err)
			}
		}
	})
}

// TestKindOf: an item's kind is told by its key alone, as the contract's
// key shapes have it; an owner's trigger count and a trigger's run are
// items of another kind, and so are the items beside an owner's
// environments (its default pointer, its name claims, its count).
func TestKindOf(t *testing.T) {
	e := newEnvironment("env_a", "Node", "u1", "o1", now)
	for _, r := range []struct {
		item Item
		want ItemKind
	}{
		{SessionKey("workspace_a"), KindSession},
		{LedgerKey("u1", "k"), KindLedger},
		{triggerKey("trg_a"), KindTrigger},
		{runKey("trg_a", trigger.Run{At: now}), KindOther},
		{ownerCountKey(&trigger.Trigger{UserID: "u1"}), KindOther},
		{ownerCountKey(&trigger.Trigger{UserID: "u1", OrgID: "o1"}), KindOther},
		{markerKey("trg_a", "trigger:trg_a:hook:0123"), KindOther},
		{rateKey("trg_a", now), KindOther},
		{Item{"PK": S("SESSION#workspace_a"), "SK": S("LEDGER")}, KindOther},
		{Item{"PK": S("TRIGGER#trg_a")}, KindOther},
		{Item{"PK": &types.AttributeValueMemberN{Value: "1"}, "SK": S("METADATA")}, KindOther},
		{environmentKey("env_a"), KindEnvironment},
		{defaultKey("u1", ""), KindOther},
		{defaultKey("u1", "o1"), KindOther},
		{nameKey(e), KindOther},
		{envCountKey(e), KindOther},
		{Item{"PK": S("ENVIRONMENT#env_a"), "SK": S("DEFAULTENV")}, KindOther},
		{Item{"PK": S("ENVIRONMENT#env_a")}, KindOther},
	} {
		if got := kindOf(r.item); got != r.want {
			t.Errorf("%v: kind %d, want %d", r.item, got, r.want)
		}
	}
}

// TestRefusals is the one reading of the SDK's errors, operation by
// operation: what refused a write (a failed condition, a conflict, by
// item) is each operation's answer, and every other error is a fault,
// service_unavailable when a later try may pass (throttled, a deadline
// met), internal_error otherwise (a missing table). TestTransactionConflict,
// TestMoved and TestTriggerCountConflict hold each transaction's rules
// item by item.
func TestRefusals(t *testing.T) {
	// Each operation, by the name its faults carry.
	ops := map[string]func(error) error{
		"put session":        func(err error) error { return putSessionError(err, nil) },
		"create session":     func(err error) error { _, err = transactionError(err, nil); return err },
		"create trigger":     func(err error) error { return countError("create trigger", err) },
		"record trigger run": func(err error) error { return moved("record trigger run", err) },
		"park trigger":       parkError,
		"get item":           func(err error) error { return failed("get item", err) },
	}
	canceled := func(codes ...string) error {
		tce := &types.TransactionCanceledException{}
		for _, c := range codes {
			tce.CancellationReasons = append(tce.CancellationReasons, types.CancellationReason{Code: aws.String(c)})
		}
		return tce
	}
	// The SDK wraps what the table answered.
	wrapped := func(err error) error {
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Op", Err: err}
	}
	type row struct {
		op, rule string
		err      error
		want     any // nil, a sentinel error, or a problem code
	}
	var rows []row
	for op := range ops {
		rows = append(rows,
			row{op, "no error", nil, nil},
			row{op, "throttled", wrapped(&types.ProvisionedThroughputExceededException{}), problem.ServiceUnavailable},
			row{op, "a deadline", fmt.Errorf("attempt: %w", context.DeadlineExceeded), problem.ServiceUnavailable},
			row{op, "no such table", wrapped(&types.ResourceNotFoundException{}), problem.InternalError},
		)
	}
	rows = append(rows,
		row{"put session", "the key is taken", wrapped(&types.ConditionalCheckFailedException{}), ErrSessionExists},
		row{"create session", "the row refused it", wrapped(canceled("None", "ConditionalCheckFailed")), ErrLedgerExists},
		row{"create session", "throttled by request rate", wrapped(canceled("RequestLimitExceeded", "None")), problem.ServiceUnavailable},
		row{"create trigger", "throttled on the count", wrapped(canceled("None", "ProvisionedThroughputExceeded")), problem.ServiceUnavailable},
		row{"record trigger run", "a conflict on the run", wrapped(canceled("None", "TransactionConflict")), ErrTriggerMoved},
		row{"record trigger run", "a validation error", wrapped(canceled("ValidationError", "None")), problem.InternalError},
		row{"park trigger", "deleted since", wrapped(&types.ConditionalCheckFailedException{}), nil},
		row{"park trigger", "a transaction in flight", wrapped(&types.TransactionConflictException{}), problem.ServiceUnavailable},
	)
	for _, r := range rows {
		t.Run(r.op+": "+r.rule, func(t *testing.T) {
			got := ops[r.op](r.err)
			switch want := r.want.(type) {
			case nil:
				if got != nil {
					t.Errorf("got %v", got)
				}
			case problem.Code:
				if problem.CodeOf(got) != want || !strings.Contains(got.Error(), r.op) {
					t.Errorf("got %v, want %s naming the operation", got, want)
				}
			case error:
				if !errors.Is(got, want) {
					t.Errorf("got %v, want %v", got, want)
				}
			}
		})
	}
	t.Run("create session: the row that refused it, handed back", func(t *testing.T) {
		want := newRow("k", "workspace_a", now)
		tce := &types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: aws.String("None")}, {Code: aws.String("ConditionalCheckFailed"), Item: EncodeLedger(want)},
		}}
		got, err := transactionError(wrapped(tce), nil)
		if !errors.Is(err, ErrLedgerExists) || got == nil || got.SessionID != want.SessionID {
			t.Errorf("%+v %v", got, err)
		}
	})
}

// FuzzDecodeItem: decoding any item, of any kind the key names, a run
// included, never panics, and an item that does not decode is its kind's
// error.
func FuzzDecodeItem(f *testing.F) {
	for _, pattern := range []string{"testdata/*.json", "testdata/items/*.json", "testdata/ledger/*.json"} {
		paths, err := filepath.Glob(pattern)
		if err != nil || len(paths) == 0 {
			f.Fatalf("%s: %d fixtures, %v", pattern, len(paths), err)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte(`{"PK":{"S":"TRIGGER#trg_a"},"SK":{"S":"RUN#2026-11-30T10:00:00Z"},"triggerId":{"S":"trg_a"},"slot":{"S":"2026-11-30T10:00:00Z"},` +
		`"status":{"S":"fired"},"recordedAt":{"S":"2026-11-30T10:00:00Z"},"expiresAt":{"N":"1800000000"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		item, err := localdb.UnmarshalItem(data)
		if err != nil {
			return
		}
		s := decodeScanned(item)
		var rec *InvalidSessionError
		var row *InvalidLedgerError
		var tr *InvalidTriggerError
		if s.Err != nil && !errors.As(s.Err, &rec) && !errors.As(s.Err, &row) && !errors.As(s.Err, &tr) {
			t.Fatalf("kind %d: untyped error %v", s.Kind, s.Err)
		}
		if _, err := decodeRun(item); err != nil && problem.CodeOf(err) != problem.InternalError {
			t.Fatalf("run: %v", err)
		}
	})
}
