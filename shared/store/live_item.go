package store

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/session"
	"github.com/cloud-agent/control-plane/shared/trigger"
)

// A session written from contract v7 on is live until an outcome is
// recorded: its entry, SESSION#<id> / LIVE, is written in its start's
// transaction, moved by each heartbeat of its runner and deleted with
// its outcome. The entry is in the due index (DueTriggersAll), in
// partitions of its own (LIVE#0 to LIVE#15, by a hash of the session's
// id), sorted by the session's last sign of life (nextRunAt: its start or
// last heartbeat), so that the firing's sweep finds the sessions whose
// outcome is overdue by a query per shard, never a scan. The due index is
// reused because a deployed stack gains one index per update, and v7's
// is EnvironmentsByOwner.
const liveSortKey = "LIVE"

func liveKey(sessionID string) Item { return key(sessionPrefix+sessionID, liveSortKey) }

// livePut is the put of a new session's live entry, alive since its
// start; a session that a trigger's run started names the run
// (triggerId, run: its sort key), so that the sweep marks the run beside
// the session without reading the session. It goes unconditioned: the
// session's own put holds the transaction.
func livePut(table string, rec *session.Record) types.TransactWriteItem {
	item := liveKey(rec.SessionID)
	item["dueShard"] = S(shardOf(liveShardPrefix, rec.SessionID))
	item["nextRunAt"] = S(formatTime(rec.CreatedAt))
	if tr := rec.Trigger; tr != nil {
		item["triggerId"], item["run"] = S(tr.ID), S(tr.RunKey)
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: item}}
}

// startedBy is the trigger section of a session that a trigger's run
// started: the run as the session records it.
func startedBy(triggerID string, run trigger.Run) *session.TriggerRef {
	kind := run.Kind
	if kind == "" {
		kind = trigger.KindScheduled
	}
	return &session.TriggerRef{ID: triggerID, Kind: kind, Slot: run.At, RunKey: runSortKey(run)}
}

// newSession is the transaction items of a new session rec: its put (on
// the condition that no item has its key) and, when it has its launch,
// its launch items and its live entry. Beside, when given, is the
// trigger run that starts it: rec's trigger section is set from it.
func newSession(table string, rec *session.Record, beside Beside) (types.TransactWriteItem, []types.TransactWriteItem, error) {
	if beside != nil {
		rec.Trigger = startedBy(beside.ran(rec))
	}
	put := types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: EncodeSession(rec), ConditionExpression: aws.String(sessionIsNew)}}
	launch, err := launchItems(table, rec)
	if err != nil || launch == nil {
		return put, nil, err
	}
	return put, append(launch, livePut(table, rec)), nil
}
