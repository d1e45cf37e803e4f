package store

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cloud-agent/control-plane/shared/trigger"
)

// The keys of the triggers' items. A session's and a ledger row's are
// beside their codecs (SessionKey in session_item.go, LedgerKey in
// ledger_item.go).
const (
	// A trigger's item is TRIGGER#<id> / TRIGGER; its runs share its
	// partition, RUN#<start>[#<id>] (runKey), which sort by the
	// millisecond they started, all of them below the trigger item's sort
	// key. (An older writer's whole-second key, RUN#…:00Z, sorts after the
	// millisecond keys of its own second: 'Z' is above '.'.)
	triggerPrefix  = "TRIGGER#"
	triggerSortKey = "TRIGGER"
	runPrefix      = "RUN#"
	// An owner's trigger count is TRIGGERS#ORG#<orgId> / COUNT when the
	// triggers have an org, else TRIGGERS#USER#<userId> / COUNT.
	countPrefix    = "TRIGGERS#"
	countOfUser    = "USER#"
	countOfOrg     = "ORG#"
	countSortKey   = "COUNT"
	dueShardPrefix = "DUE#"
	// A live session's entry (live_item.go) is in the due index's
	// partitions LIVE#0 to LIVE#15, which no query for due triggers reads.
	liveShardPrefix = "LIVE#"
)

// The trigger indexes of the table (template.yaml).
const (
	triggersByUser = "TriggersByUser"
	dueTriggers    = "DueTriggersAll"
	// dueShards is how many partitions of the due index active triggers
	// are spread over.
	dueShards = 16
)

func key(pk, sk string) Item { return Item{"PK": S(pk), "SK": S(sk)} }

func triggerKey(id string) Item { return key(triggerPrefix+id, triggerSortKey) }

// runKey is the key of a trigger's run: RUN#<slot> for a slot's,
// RUN#<slot>#<id> for a manual one, the slot to the millisecond in fixed
// width (runTime), so that runs of the same second, manual or not, never
// overwrite one another, and sort by the millisecond they started.
func runKey(triggerID string, run trigger.Run) Item {
	return key(triggerPrefix+triggerID, runSortKey(run))
}

func runSortKey(run trigger.Run) string {
	sk := runPrefix + runTime(run.At)
	if run.ID != "" {
		sk += "#" + run.ID
	}
	return sk
}

// runTimeFormat writes a run's start to the millisecond in fixed width,
// so that the order of the strings is the order of the instants. Older
// writers wrote whole seconds (session.TimeFormat); both read back.
const runTimeFormat = "2006-01-02T15:04:05.000Z"

func runTime(t time.Time) string { return t.UTC().Format(runTimeFormat) }

// ownerCountKey is the item that counts an owner's triggers: the org's
// when the trigger has one, else the user's.
func ownerCountKey(tr *trigger.Trigger) Item {
	owner := countOfUser + tr.UserID
	if tr.OrgID != "" {
		owner = countOfOrg + tr.OrgID
	}
	return key(countPrefix+owner, countSortKey)
}

// shardOf spreads the items of an id over the due index's partitions of
// a prefix (dueShardPrefix, liveShardPrefix) by a hash of the id.
func shardOf(prefix, id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return shardKey(prefix, int(h.Sum32()%dueShards))
}

func shardKey(prefix string, n int) string { return prefix + strconv.Itoa(n) }

// kindOf is the kind of an item, by its key.
func kindOf(item Item) ItemKind {
	pk, _ := item["PK"].(*types.AttributeValueMemberS)
	sk, _ := item["SK"].(*types.AttributeValueMemberS)
	switch {
	case pk == nil || sk == nil:
		return KindOther
	case IsSessionKey(pk.Value, sk.Value):
		return KindSession
	case IsLedgerKey(pk.Value, sk.Value):
		return KindLedger
	case strings.HasPrefix(pk.Value, triggerPrefix) && sk.Value == triggerSortKey:
		return KindTrigger
	case strings.HasPrefix(pk.Value, environmentPrefix) && sk.Value == environmentSortKey:
		return KindEnvironment
	}
	return KindOther
}
