package dynamo

import (
	"encoding/json/jsontext"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// A table's stream, as DynamoDB Streams keeps it: enabled by CreateTable
// or UpdateTable with a StreamSpecification, it records every change of an
// item, in the order of the writes, and keeps each record 24 hours. It has
// one shard, never split or closed while the stream is enabled. Disabling
// the stream (or deleting the table) closes the shard: its records stay
// readable for 24 hours, and enabling it again makes a new stream. A
// stream is answered by the DynamoDB Streams API (ops_stream.go).
//
// Records are kept in memory, at most streamCap a stream: past it the
// oldest are dropped as if trimmed (an iterator before them meets
// TrimmedDataAccessException). A record holds the items it changed (items
// are never changed once stored), not copies, and what it answers (keys,
// images by the view type, sizes) is built when it is read, so that a
// write on a table with a stream costs a comparison of the items and an
// append; a table without one pays a nil check.

// How long DynamoDB Streams keeps a record (Developer Guide, "DynamoDB
// Streams"), and the endpoint's own cap.
const (
	// streamRetention is how long a record, and a disabled stream, is kept.
	streamRetention = 24 * time.Hour
	// streamCap is the most records one stream keeps: 100,000 records
	// take about 4 MB, besides the items they hold.
	streamCap = 100_000
)

// streamViews are the view types of a stream, as DynamoDB lists them.
var streamViews = []string{"NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY"}

// region and arnPrefix are the endpoint's region and the beginning of
// its resources' ARNs.
const (
	region    = "us-east-1"
	arnPrefix = "arn:aws:dynamodb:" + region + ":000000000000:table/"
)

// stream is a table's stream and its one shard.
type stream struct {
	db                *DB
	arn, label, table string
	shard             string
	key               keySchema
	view              string
	created           time.Time
	salt              uint64 // makes the records' eventIDs
	start             uint64 // the shard's first sequence number
	records           []record
	trimmed           uint64    // the sequence number of the last record dropped (0: none)
	disabled          time.Time // zero while the stream is enabled
	end               uint64    // the shard's last sequence number, once disabled
}

// record is one change of an item: before and after it (nil: none).
type record struct {
	seq           uint64
	at            int64 // Unix nanoseconds
	before, after item
	expired       bool // deleted by the time to live
}

// streamLabelLayout is a stream label's: its creation time, UTC, to the
// millisecond.
const streamLabelLayout = "2006-01-02T15:04:05.000"

// enableStream gives t a new stream of view type view.
func (db *DB) enableStream(t *table, view string) {
	now := db.now()
	s := &stream{db: db, table: t.name, key: t.key, view: view, created: now, salt: rand.Uint64(), start: db.seq + 1}
	for {
		s.label = now.UTC().Format(streamLabelLayout)
		s.arn = arnPrefix + t.name + "/stream/" + s.label
		if db.streams[s.arn] == nil {
			break
		}
		now = now.Add(time.Millisecond)
	}
	s.shard = fmt.Sprintf("shardId-%020d-%08x", now.UnixMilli(), uint32(s.salt))
	db.streams[s.arn] = s
	t.stream, t.latest = s, s
}

// disableStream closes t's stream, if it has one: its shard ends at its
// last record (at its start, when it has none).
func (t *table) disableStream(now time.Time) {
	s := t.stream
	if s == nil {
		return
	}
	s.disabled, s.end = now, max(s.start, s.trimmed)
	if n := len(s.records); n > 0 {
		s.end = s.records[n-1].seq
	}
	t.stream = nil
}

// gone reports whether the stream was disabled more than 24 hours ago.
func (s *stream) gone(now time.Time) bool {
	return !s.disabled.IsZero() && now.Sub(s.disabled) > streamRetention
}

// change records that an item went from before to after (nil: none), unless
// it did not change; expired says that the time to live deleted it.
func (s *stream) change(before, after item, expired bool) {
	if before == nil && after == nil || before != nil && after != nil && equal(mapValue(before), mapValue(after)) {
		return
	}
	db := s.db
	db.seq++
	at := db.now().UnixNano()
	if n := len(s.records); n > 0 {
		at = max(at, s.records[n-1].at)
	}
	s.trim(at, db.streamCap-1)
	s.records = append(s.records, record{seq: db.seq, at: at, before: before, after: after, expired: expired})
}

// trim drops the records older than 24 hours at now (Unix nanoseconds),
// and the oldest beyond keep.
func (s *stream) trim(now int64, keep int) {
	cut := now - int64(streamRetention)
	n := 0
	for n < len(s.records) && (s.records[n].at < cut || len(s.records)-n > keep) {
		n++
	}
	if n > 0 {
		s.trimmed = s.records[n-1].seq
		clear(s.records[:n])
		s.records = s.records[n:]
	}
}

// horizon is the index of the first record kept at now, and the sequence
// number of the last record trimmed before it (0: none): records older
// than 24 hours are trimmed as they are read, before a write drops them.
func (s *stream) horizon(now time.Time) (int, uint64) {
	cut := now.UnixNano() - int64(streamRetention)
	i := sort.Search(len(s.records), func(i int) bool { return s.records[i].at >= cut })
	if i == 0 {
		return 0, s.trimmed
	}
	return i, s.records[i-1].seq
}

// sweepStreams trims every stream, and forgets those disabled more than 24
// hours ago.
func (db *DB) sweepStreams() {
	db.mu.Lock()
	defer db.mu.Unlock()
	now := db.now()
	for arn, s := range db.streams {
		if s.gone(now) {
			delete(db.streams, arn)
			s.records = nil
			continue
		}
		s.trim(now.UnixNano(), db.streamCap)
	}
}

// streamSpecification is a table's StreamSpecification, as CreateTable and
// UpdateTable take it.
type streamSpecification struct {
	StreamEnabled  *bool
	StreamViewType string
}

// view checks a StreamSpecification as CreateTable (create) or UpdateTable
// takes it, and is the view type of the stream it enables: "" when it
// enables none (at create) or disables the table's (at update).
func (s *streamSpecification) view(create bool) (string, error) {
	if s == nil {
		return "", nil
	}
	if s.StreamViewType != "" && !slices.Contains(streamViews, s.StreamViewType) {
		return "", validationError("1 validation error detected: Value '%s' at 'streamSpecification.streamViewType' failed to satisfy constraint: Member must satisfy enum value set: [%s]",
			s.StreamViewType, strings.Join(streamViews, ", "))
	}
	if s.StreamEnabled == nil {
		return "", validationError("1 validation error detected: Value null at 'streamSpecification.streamEnabled' failed to satisfy constraint: Member must not be null")
	}
	enabled, given := *s.StreamEnabled, s.StreamViewType != ""
	switch {
	case enabled && !given && create:
		return "", invalidParameter("Table is being created with a stream enabled, UpdateViewType is required")
	case enabled && !given:
		return "", invalidParameter("If stream is being enabled then UpdateViewType is required")
	case !enabled && given && create:
		return "", invalidParameter("Table is being created with a stream disabled, UpdateViewType should not be specified")
	case !enabled && given:
		return "", invalidParameter("If stream is being disabled, then UpdateViewType must not be specified")
	}
	return s.StreamViewType, nil
}

// describeStream adds the table's stream to its description d: the latest
// stream's ARN and label (kept once it is disabled), and the
// specification of the one enabled.
func (t *table) describeStream(d map[string]any) {
	if t.latest != nil {
		d["LatestStreamArn"], d["LatestStreamLabel"] = t.latest.arn, t.latest.label
	}
	if t.stream != nil {
		d["StreamSpecification"] = map[string]any{"StreamEnabled": true, "StreamViewType": t.stream.view}
	}
}

type updateTableInput struct {
	TableName           string
	StreamSpecification *streamSpecification
	// Other are the request's other members: what the endpoint does not
	// change.
	Other map[string]jsontext.Value `json:",embed"`
}

// updateTable enables or disables a table's stream, the one change the
// endpoint makes of a table; it refuses, as DynamoDB does, to enable a
// second stream or disable none. It takes effect at once (DynamoDB's
// table is UPDATING for a few seconds, and so is the answer's).
func (db *DB) updateTable(in *updateTableInput) (any, error) {
	if err := checkTableName(in.TableName); err != nil {
		return nil, err
	}
	if len(in.Other) > 0 {
		return nil, validationError("the embedded endpoint's UpdateTable changes a table's stream (StreamSpecification) only, not %s",
			strings.Join(slices.Sorted(maps.Keys(in.Other)), ", "))
	}
	if in.StreamSpecification == nil {
		return nil, validationError("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates, SSESpecification, ReplicaUpdates, DeletionProtectionEnabled, OnDemandThroughput, WarmThroughput or TableClass is required")
	}
	view, err := in.StreamSpecification.view(false)
	if err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	t, err := db.table(in.TableName)
	if err == nil {
		err = db.switchStream(t, view)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"TableDescription": t.describe("UPDATING")}, nil
}

// switchStream gives t a stream of view type view, or disables t's when
// view is "", under the lock.
func (db *DB) switchStream(t *table, view string) error {
	switch {
	case view != "" && t.stream != nil:
		return validationError("Table already has an enabled stream: TableName: %s", t.name)
	case view == "" && t.stream == nil:
		return validationError("Table has no stream to disable: TableName: %s", t.name)
	case view != "":
		db.enableStream(t, view)
	default:
		t.disableStream(db.now())
	}
	return nil
}
