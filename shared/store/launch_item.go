package store

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/environment"
	"github.com/cloud-agent/control-plane/shared/session"
)

// A session written from contract v7 on keeps what it was started with
// beside its metadata, in its start's one transaction: SESSION#<id> /
// PROMPT (initialTurn) and, when it runs in an environment, SESSION#<id>
// / ENV_SNAPSHOT (the environment as it was), both expiring launchKept
// after the start. The lookup and the audit read METADATA only.
const (
	promptSortKey   = "PROMPT"
	snapshotSortKey = "ENV_SNAPSHOT"
	launchKept      = 30 * 24 * time.Hour
)

// launchItems are the puts of rec's launch items; none when rec has no
// launch (a record read back). They go unconditioned: the session's own
// put, new on its key, holds the transaction.
func launchItems(table string, rec *session.Record) ([]types.TransactWriteItem, error) {
	l := rec.Launch
	if l == nil {
		return nil, nil
	}
	expires := N(rec.CreatedAt.Add(launchKept).Unix())
	turn := Item{}
	if l.Prompt != nil {
		turn["prompt"] = S(*l.Prompt)
	}
	prompt := key(sessionPrefix+rec.SessionID, promptSortKey)
	prompt["initialTurn"], prompt["expiresAt"] = M(turn), expires
	items := []types.TransactWriteItem{{Put: &types.Put{TableName: &table, Item: prompt}}}
	if e := l.Environment; e != nil {
		vars, err := encodeVariables(e.Variables)
		if err != nil {
			return nil, err
		}
		snap := key(sessionPrefix+rec.SessionID, snapshotSortKey)
		snap["environmentId"], snap["version"], snap["name"] = S(e.ID), N(int64(e.Version)), S(e.Name)
		snap["variables"], snap["setupCommands"], snap["expiresAt"] = vars, L(e.SetupCommands), expires
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: snap}})
	}
	return items, nil
}

// decodePrompt reads a PROMPT item's prompt: nil when none was given; an
// item that does not decode is an error.
func decodePrompt(item Item) (*string, error) {
	var r AttrReader
	turn, _ := r.Map(item, "", "initialTurn")
	if _, given := turn["prompt"]; !given {
		return nil, r.Err()
	}
	prompt := r.Str(turn, "initialTurn.", "prompt")
	return &prompt, r.Err()
}

// decodeSnapshot reads an ENV_SNAPSHOT item: the environment as the
// session was started in it.
func decodeSnapshot(item Item) (*environment.Environment, error) {
	var r AttrReader
	e := &environment.Environment{
		ID: r.Str(item, "", "environmentId"), Name: r.Str(item, "", "name"), Version: int(r.Int(item, "", "version")),
	}
	if vars, ok := r.Map(item, "", "variables"); ok {
		e.Variables = decodeVariables(&r, vars)
	}
	e.SetupCommands, _ = r.Strings(item, "", "setupCommands")
	return e, r.Err()
}
