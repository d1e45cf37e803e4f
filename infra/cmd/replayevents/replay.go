package main

import (
	"context"
	jsonv2 "encoding/json/v2"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/cloud-agent/control-plane/infra/streamevent"
	"github.com/cloud-agent/control-plane/shared/sessionevents"
)

// batchSize is the most records one event holds: the mapping's BatchSize
// in template.yaml.
const batchSize = 100

// Deliver hands the session events function one batch's event, as Lambda
// invokes it, and returns its answer.
type Deliver func(ctx context.Context, event []byte) ([]byte, error)

// Counts are what a replay did: the records read, the events put, the
// records that announce nothing (skipped), and the events not put.
type Counts struct{ Records, Put, Skipped, Failed int }

func (c *Counts) add(o Counts) {
	c.Records, c.Put, c.Skipped, c.Failed = c.Records+o.Records, c.Put+o.Put, c.Skipped+o.Skipped, c.Failed+o.Failed
}

func (c Counts) String() string {
	return fmt.Sprintf("%d records read, %d events put, %d skipped, %d failed", c.Records, c.Put, c.Skipped, c.Failed)
}

// replay replays each range: its line goes to stdout, a fault to stderr.
// It fails when a range could not be read or an event was not put.
func replay(ctx context.Context, sc *dynamodbstreams.Client, ranges []Range, deliver Deliver, stdout, stderr io.Writer) error {
	var total Counts
	unread := 0
	for _, r := range ranges {
		c, err := replayRange(ctx, sc, r, deliver, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "replay-events:", err)
			unread++
			continue
		}
		fmt.Fprintf(stdout, "%s: %s\n", r, c)
		total.add(c)
	}
	if len(ranges) != 1 {
		fmt.Fprintf(stdout, "%d ranges, %d not read: %s\n", len(ranges), unread, total)
	}
	if unread > 0 || total.Failed > 0 {
		return fmt.Errorf("%d ranges not read, %d events not put: put them again once the cause is fixed", unread, total.Failed)
	}
	return nil
}

// replayRange reads a range from the stream and hands its records to the
// function in batches of at most batchSize, in order. A batch the
// function fails counts its events as failed, and the next is handed
// still.
func replayRange(ctx context.Context, sc *dynamodbstreams.Client, r Range, deliver Deliver, stderr io.Writer) (Counts, error) {
	recs, err := read(ctx, sc, r)
	if err != nil {
		return Counts{}, err
	}
	c := Counts{Records: len(recs)}
	for batch := range slices.Chunk(recs, batchSize) {
		announcing, failed, err := handOver(ctx, batch, deliver)
		if err != nil {
			fmt.Fprintf(stderr, "replay-events: %s: a batch from %s: %v\n", r, batch[0].Seq, err)
		}
		c.add(Counts{Put: announcing - failed, Skipped: len(batch) - announcing, Failed: failed})
	}
	return c, nil
}

// handOver hands one batch to the function: of the records that announce
// an event, how many the function failed (all of them when it failed
// the batch whole, with the cause; every record when the event could not
// be made).
func handOver(ctx context.Context, batch []streamevent.Record, deliver Deliver) (announcing, failed int, err error) {
	ev, err := streamevent.Event(batch)
	var e events.DynamoDBEvent
	if err == nil {
		err = jsonv2.Unmarshal(ev, &e)
	}
	if err != nil {
		return len(batch), len(batch), fmt.Errorf("the event: %w", err)
	}
	announcing = sessionevents.Announcing(e.Records)
	answer, err := deliver(ctx, ev)
	if err != nil {
		return announcing, announcing, err
	}
	listed, why := streamevent.ItemFailures(answer, batch)
	if why != "" {
		return announcing, announcing, errors.New(why)
	}
	return announcing, len(listed), nil
}
