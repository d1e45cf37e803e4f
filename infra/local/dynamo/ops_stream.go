package dynamo

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The DynamoDB Streams API (X-Amz-Target DynamoDBStreams_20120810.<op>)
// for the tables' streams (stream.go): ListStreams, DescribeStream,
// GetShardIterator and GetRecords, checked and answered as DynamoDB
// Streams does.

// streamOperations are the DynamoDB Streams operations the endpoint
// serves.
var streamOperations map[string]operation

func init() {
	streamOperations = map[string]operation{
		"ListStreams":      serve((*DB).listStreams),
		"DescribeStream":   serve((*DB).describeStream),
		"GetShardIterator": serve((*DB).getShardIterator),
		"GetRecords":       serve((*DB).getRecords),
	}
}

// The limits of the Streams API (API Reference, DynamoDB Streams).
const (
	iteratorLife   = 15 * time.Minute
	maxRecords     = 1000    // a GetRecords' records
	maxRecordBytes = 1 << 20 // a GetRecords' data
)

// validLimit is a Limit member: most when absent, else it must be 1 to
// most.
func validLimit(limit *int, most int) (int, error) {
	if limit == nil {
		return most, nil
	}
	if *limit < 1 || *limit > most {
		return 0, validationError("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and %d", *limit, most)
	}
	return *limit, nil
}

// checkStreamARN refuses what is not a stream's ARN.
func checkStreamARN(arn string) error {
	if len(arn) < 37 || len(arn) > 1024 || !strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":table/") || !strings.Contains(arn, "/stream/") {
		return validationError("Invalid StreamArn: %s", arn)
	}
	return nil
}

// streamOf is the stream of an ARN, under the lock, or
// ResourceNotFoundException for one the endpoint does not have (or no
// longer: 24 hours after it was disabled).
func (db *DB) streamOf(arn string, now time.Time) (*stream, error) {
	if err := checkStreamARN(arn); err != nil {
		return nil, err
	}
	s := db.streams[arn]
	if s == nil || s.gone(now) {
		return nil, dynamoError("ResourceNotFoundException", "Requested resource not found: Stream: %s not found", arn)
	}
	return s, nil
}

type listStreamsInput struct {
	TableName               string
	Limit                   *int
	ExclusiveStartStreamArn string
}

type streamSummary struct {
	StreamArn, StreamLabel, TableName string
}

// listStreams answers a page of the streams (of TableName when given) in
// the order of their ARNs, enabled or disabled within 24 hours.
func (db *DB) listStreams(in *listStreamsInput) (any, error) {
	limit, err := validLimit(in.Limit, 100)
	if err != nil {
		return nil, err
	}
	if in.TableName != "" {
		if err := checkTableName(in.TableName); err != nil {
			return nil, err
		}
	}
	if in.ExclusiveStartStreamArn != "" {
		if err := checkStreamARN(in.ExclusiveStartStreamArn); err != nil {
			return nil, err
		}
	}
	list := []streamSummary{}
	db.mu.RLock()
	now := db.now()
	for _, s := range db.streams {
		if !s.gone(now) && (in.TableName == "" || s.table == in.TableName) && s.arn > in.ExclusiveStartStreamArn {
			list = append(list, streamSummary{s.arn, s.label, s.table})
		}
	}
	db.mu.RUnlock()
	slices.SortFunc(list, func(a, b streamSummary) int { return strings.Compare(a.StreamArn, b.StreamArn) })
	out := struct {
		Streams                []streamSummary
		LastEvaluatedStreamArn string
	}{Streams: list}
	if len(list) > limit {
		out.Streams, out.LastEvaluatedStreamArn = list[:limit], list[limit-1].StreamArn
	}
	return out, nil
}

type describeStreamInput struct {
	StreamArn             string
	Limit                 *int
	ExclusiveStartShardId string
	ShardFilter           *struct {
		Type    string
		ShardId string
	}
}

type shardDescription struct {
	ShardId             string
	SequenceNumberRange struct {
		StartingSequenceNumber string
		EndingSequenceNumber   string
	}
}

// describeStream describes a stream and its one shard (none after
// ExclusiveStartShardId, and no child shard of it).
func (db *DB) describeStream(in *describeStreamInput) (any, error) {
	if _, err := validLimit(in.Limit, 100); err != nil {
		return nil, err
	}
	if f := in.ShardFilter; f != nil && (f.Type != "CHILD_SHARDS" || f.ShardId == "") {
		return nil, validationError("ShardFilter needs Type CHILD_SHARDS and a ShardId")
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	s, err := db.streamOf(in.StreamArn, db.now())
	if err != nil {
		return nil, err
	}
	status := "ENABLED"
	shard := shardDescription{ShardId: s.shard}
	shard.SequenceNumberRange.StartingSequenceNumber = sequenceNumber(s.start)
	if !s.disabled.IsZero() {
		status = "DISABLED"
		shard.SequenceNumberRange.EndingSequenceNumber = sequenceNumber(s.end)
	}
	shards := []shardDescription{}
	if in.ShardFilter == nil && s.shard > in.ExclusiveStartShardId {
		shards = append(shards, shard)
	}
	return map[string]any{"StreamDescription": map[string]any{
		"StreamArn": s.arn, "StreamLabel": s.label, "StreamStatus": status, "StreamViewType": s.view,
		"CreationRequestDateTime": float64(s.created.UnixMilli()) / 1000, "TableName": s.table,
		"KeySchema": describeKey(s.key), "Shards": shards,
	}}, nil
}

// sequenceNumber is a record's sequence number as DynamoDB writes it: 21
// decimal digits (a 1, then the number), so that they sort as numbers and
// as strings.
func sequenceNumber(n uint64) string {
	return fmt.Sprintf("1%020d", n)
}

// parseSequenceNumber reads a sequence number the endpoint gave.
func parseSequenceNumber(s string) (uint64, bool) {
	if len(s) != 21 || s[0] != '1' {
		return 0, false
	}
	n, err := strconv.ParseUint(s[1:], 10, 64)
	return n, err == nil
}

type getShardIteratorInput struct {
	StreamArn         string
	ShardId           string
	ShardIteratorType string
	SequenceNumber    *string
	Timestamp         *float64 // epoch seconds
}

// getShardIterator answers an iterator of a stream's shard, at the
// position its type names.
func (db *DB) getShardIterator(in *getShardIteratorInput) (any, error) {
	if err := checkIteratorType(in); err != nil {
		return nil, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	now := db.now()
	s, err := db.streamOf(in.StreamArn, now)
	if err != nil {
		return nil, err
	}
	if in.ShardId != s.shard {
		return nil, dynamoError("ResourceNotFoundException", "Requested resource not found: Shard: %s in Stream: %s not found", in.ShardId, s.arn)
	}
	from, err := s.position(in, now)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ShardIterator": db.iterator(s, from, now)}, nil
}

// checkIteratorType checks a GetShardIterator's type and the members it
// needs: a sequence number for AT_ and AFTER_SEQUENCE_NUMBER, a timestamp
// for AT_TIMESTAMP, neither for the others.
func checkIteratorType(in *getShardIteratorInput) error {
	types := []string{"TRIM_HORIZON", "LATEST", "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER", "AT_TIMESTAMP"}
	if !slices.Contains(types, in.ShardIteratorType) {
		return validationError("1 validation error detected: Value '%s' at 'shardIteratorType' failed to satisfy constraint: Member must satisfy enum value set: [%s]",
			in.ShardIteratorType, strings.Join(types, ", "))
	}
	bySequence := strings.HasSuffix(in.ShardIteratorType, "_SEQUENCE_NUMBER")
	switch {
	case bySequence != (in.SequenceNumber != nil):
		return validationError("SequenceNumber must be given with, and only with, ShardIteratorType AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER")
	case (in.ShardIteratorType == "AT_TIMESTAMP") != (in.Timestamp != nil):
		return validationError("Timestamp must be given with, and only with, ShardIteratorType AT_TIMESTAMP")
	}
	return nil
}

// position is the sequence number an iterator of in's type reads from, at
// now, under the lock.
func (s *stream) position(in *getShardIteratorInput, now time.Time) (uint64, error) {
	first, trimmed := s.horizon(now)
	next := s.db.seq + 1 // the next record's, while the stream is enabled
	if !s.disabled.IsZero() {
		next = s.end + 1
	}
	switch in.ShardIteratorType {
	case "TRIM_HORIZON":
		return max(s.start, trimmed+1), nil
	case "LATEST":
		return next, nil
	case "AT_TIMESTAMP":
		at := *in.Timestamp
		if math.IsNaN(at) || at > float64(now.UnixMilli())/1000 {
			return 0, validationError("The Timestamp %v is in the future", at)
		}
		kept := s.records[first:]
		if i := sort.Search(len(kept), func(i int) bool { return float64(kept[i].at)/1e9 >= at }); i < len(kept) {
			return kept[i].seq, nil
		}
		return next, nil
	}
	n, ok := parseSequenceNumber(*in.SequenceNumber)
	if !ok || n < s.start || n > max(s.start, next-1) {
		return 0, validationError("Invalid SequenceNumber %s: it is not a sequence number of shard %s", *in.SequenceNumber, s.shard)
	}
	if in.ShardIteratorType == "AFTER_SEQUENCE_NUMBER" {
		n++
	}
	if n <= trimmed {
		return 0, trimmedData(trimmed)
	}
	return n, nil
}

func trimmedData(trimmed uint64) error {
	return dynamoError("TrimmedDataAccessException", "The operation attempted to read past the oldest stream record in a shard: the records up to %s are trimmed", sequenceNumber(trimmed))
}

// iteratorMAC is how many bytes of an iterator's MAC it holds.
const iteratorMAC = 16

// iterator is a shard iterator: the stream's ARN, then (base64) the
// sequence number it reads from, when it was issued, and a MAC of the
// three, so that only an iterator the endpoint gave reads.
func (db *DB) iterator(s *stream, from uint64, issued time.Time) string {
	var b [16 + iteratorMAC]byte
	binary.BigEndian.PutUint64(b[0:], from)
	binary.BigEndian.PutUint64(b[8:], uint64(issued.UnixNano()))
	copy(b[16:], db.iteratorSum(s.arn, b[:16]))
	return s.arn + "|1|" + base64.RawURLEncoding.EncodeToString(b[:])
}

func (db *DB) iteratorSum(arn string, position []byte) []byte {
	mac := hmac.New(sha256.New, db.iteratorKey[:])
	mac.Write([]byte(arn))
	mac.Write(position)
	return mac.Sum(nil)[:iteratorMAC]
}

// parseIterator reads an iterator the endpoint gave: its stream's ARN,
// the sequence number it reads from and when it was issued.
func (db *DB) parseIterator(it string) (arn string, from uint64, issued time.Time, err error) {
	bad := validationError("Invalid ShardIterator: it is not one the endpoint gave")
	arn, enc, ok := strings.Cut(it, "|1|")
	b, decErr := base64.RawURLEncoding.DecodeString(enc)
	if len(it) > 2048 || !ok || decErr != nil || len(b) != 16+iteratorMAC || !hmac.Equal(b[16:], db.iteratorSum(arn, b[:16])) {
		return "", 0, time.Time{}, bad
	}
	return arn, binary.BigEndian.Uint64(b), time.Unix(0, int64(binary.BigEndian.Uint64(b[8:]))), nil
}
