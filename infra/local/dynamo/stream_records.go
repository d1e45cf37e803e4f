package dynamo

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

type getRecordsInput struct {
	ShardIterator string
	Limit         *int
}

// recordOut is a stream record as GetRecords answers it.
type recordOut struct {
	AwsRegion    string          `json:"awsRegion"`
	Dynamodb     streamRecordOut `json:"dynamodb"`
	EventID      string          `json:"eventID"`
	EventName    string          `json:"eventName"`
	EventSource  string          `json:"eventSource"`
	EventVersion string          `json:"eventVersion"`
	UserIdentity *identity       `json:"userIdentity"`
}

type streamRecordOut struct {
	ApproximateCreationDateTime int64
	Keys, NewImage, OldImage    item
	SequenceNumber              string
	SizeBytes                   int
	StreamViewType              string
}

// identity is who made a change, given for the time to live's deletions
// only.
type identity struct{ PrincipalId, Type string }

// ttlIdentity made the deletions of the time to live.
var ttlIdentity = &identity{PrincipalId: "dynamodb.amazonaws.com", Type: "Service"}

// getRecords answers a shard's records from an iterator's position, in
// the order of the writes, at most Limit (1,000 when absent) and 1 MB of
// them, and the iterator of what follows (none once a disabled stream's
// shard is read to its end). The records are copied under the lock and
// built after it.
func (db *DB) getRecords(in *getRecordsInput) (any, error) {
	limit, err := validLimit(in.Limit, maxRecords)
	if err != nil {
		return nil, err
	}
	arn, from, issued, err := db.parseIterator(in.ShardIterator)
	if err != nil {
		return nil, err
	}
	db.mu.RLock()
	now := db.now()
	s, recs, rest, err := db.read(arn, from, issued, limit, now)
	closed := err == nil && !s.disabled.IsZero()
	db.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	out := struct {
		Records           []recordOut
		NextShardIterator string
	}{Records: make([]recordOut, 0, len(recs))}
	size := 0
	for i, r := range recs {
		o := s.render(r)
		if size += o.Dynamodb.SizeBytes; i > 0 && size > maxRecordBytes {
			rest = true
			break
		}
		out.Records, from = append(out.Records, o), r.seq+1
	}
	if !closed || rest {
		out.NextShardIterator = db.iterator(s, from, now)
	}
	return out, nil
}

// read copies, under the lock, up to limit records of the stream of arn
// from sequence number from, for an iterator issued then, and says
// whether more follow them; it refuses an iterator over 15 minutes old,
// and a position the trimming passed.
func (db *DB) read(arn string, from uint64, issued time.Time, limit int, now time.Time) (s *stream, recs []record, rest bool, err error) {
	if s, err = db.streamOf(arn, now); err != nil {
		return nil, nil, false, err
	}
	if now.Sub(issued) > iteratorLife {
		return nil, nil, false, dynamoError("ExpiredIteratorException", "Iterator expired: it was issued at %s, over %v before %s",
			issued.UTC().Format(streamLabelLayout), iteratorLife, now.UTC().Format(streamLabelLayout))
	}
	first, trimmed := s.horizon(now)
	if from <= trimmed {
		return nil, nil, false, trimmedData(trimmed)
	}
	kept := s.records[first:]
	i := sort.Search(len(kept), func(i int) bool { return kept[i].seq >= from })
	j := min(i+limit, len(kept))
	return s, slices.Clone(kept[i:j]), j < len(kept), nil
}

// render is a record as GetRecords answers it: its keys, and the images
// its stream's view type keeps.
func (s *stream) render(r record) recordOut {
	o := recordOut{AwsRegion: region, EventSource: "aws:dynamodb", EventVersion: "1.1",
		EventID: fmt.Sprintf("%016x%016x", s.salt, r.seq), EventName: "MODIFY"}
	img := r.after
	switch {
	case r.before == nil:
		o.EventName = "INSERT"
	case r.after == nil:
		o.EventName, img = "REMOVE", r.before
	}
	if r.expired {
		o.UserIdentity = ttlIdentity
	}
	d := streamRecordOut{ApproximateCreationDateTime: r.at / 1e9, SequenceNumber: sequenceNumber(r.seq), StreamViewType: s.view, Keys: item{}}
	for _, n := range s.key.names() {
		d.Keys[n] = img[n]
	}
	if s.view == "NEW_IMAGE" || s.view == "NEW_AND_OLD_IMAGES" {
		d.NewImage = r.after
	}
	if s.view == "OLD_IMAGE" || s.view == "NEW_AND_OLD_IMAGES" {
		d.OldImage = r.before
	}
	d.SizeBytes = d.Keys.size() + d.NewImage.size() + d.OldImage.size()
	o.Dynamodb = d
	return o
}
