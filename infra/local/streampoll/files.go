package streampoll

import (
	jsonv2 "encoding/json/v2"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/cloud-agent/control-plane/infra/streamevent"
)

// checkpoint is the position the poller settled: the last record of a
// shard that it invoked the function with (or dropped, or sent to the
// failure file).
type checkpoint struct {
	StreamARN      string `json:"streamArn"`
	ShardID        string `json:"shardId"`
	SequenceNumber string `json:"sequenceNumber"`
}

// readCheckpoint reads the checkpoint file; a missing file is no
// position.
func readCheckpoint(path string) (checkpoint, error) {
	var c checkpoint
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err == nil {
		err = jsonv2.Unmarshal(b, &c)
	}
	if err != nil {
		return c, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return c, nil
}

// writeCheckpoint replaces the checkpoint file with c, atomically: a
// temporary file beside it, then a rename.
func writeCheckpoint(path string, c checkpoint) error {
	b, err := jsonv2.Marshal(c)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return nil
}

// newFailure is the invocation record of a discarded batch (not empty):
// invokes invocations, the last answered by last (nil: none).
func newFailure(p *Poller, shard string, batch []record, condition string, invokes int, last *streamevent.ResponseContext, now time.Time) streamevent.Failure {
	var f streamevent.Failure
	f.RequestContext.RequestID = uuid.NewString()
	f.RequestContext.FunctionARN = p.FunctionARN
	f.RequestContext.Condition = condition
	f.RequestContext.ApproximateInvokeCount = invokes
	f.ResponseContext, f.Version = last, "1.0"
	f.Timestamp = now.UTC().Format("2006-01-02T15:04:05.000Z")
	first, end := batch[0], batch[len(batch)-1]
	f.BatchInfo = streamevent.BatchInfo{
		ShardID: shard, StartSequenceNumber: first.Seq, EndSequenceNumber: end.Seq,
		ApproximateArrivalOfFirstRecord: first.At.UTC().Format(time.RFC3339),
		ApproximateArrivalOfLastRecord:  end.At.UTC().Format(time.RFC3339),
		BatchSize:                       len(batch), StreamARN: p.StreamARN,
	}
	return f
}

// appendFailure adds f to the failure file, one JSON line.
func appendFailure(path string, f streamevent.Failure) error {
	b, err := jsonv2.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = file.Write(append(b, '\n'))
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("failure file %s: %w", path, err)
	}
	return nil
}
