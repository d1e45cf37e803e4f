package local

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/cloud-agent/control-plane/infra/local/streampoll"
	"github.com/cloud-agent/control-plane/infra/template"
)

// The local files of the stream's mapping, in the folder of the settings
// file unless Config names others.
const (
	checkpointFile = "stream-checkpoint.json"
	failuresFile   = "session-events-failures.jsonl"
)

// startStreams gives the table the template's stream, when it has none
// yet, and polls it for each of the template's event source mappings as
// Lambda does, invoking the mapping's function under the emulator, until
// the stack stops. The stream's client uses
// AWS_ENDPOINT_URL_DYNAMODB_STREAMS, else the table's endpoint.
func (s *Stack) startStreams(ctx context.Context, tpl *template.Template, logs *slog.Logger) error {
	spec, err := template.StreamSpecification(tpl, template.TableLogicalID)
	mappings := template.StreamMappings(tpl)
	if err != nil || spec == nil || len(mappings) == 0 {
		return err
	}
	arn, err := template.EnsureStream(ctx, s.client, template.TableLogicalID, spec)
	if err != nil {
		return err
	}
	s.StreamARN = arn
	client := dynamodbstreams.New(dynamodbstreams.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(cmp.Or(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS"), s.DynamoURL)),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	var wg sync.WaitGroup
	for _, m := range mappings {
		p := &streampoll.Poller{
			Streams: client, StreamARN: arn, FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:" + m.FunctionID,
			Mapping: streampoll.Mapping{
				BatchSize: m.BatchSize, Window: m.Window, MaxRetries: m.MaxRetries, Bisect: m.Bisect,
				MaxRecordAge: m.MaxRecordAge, ReportBatchItemFailures: m.ReportBatchItemFailures, Filters: m.Filters,
			},
			Invoke:     func(ctx context.Context, event []byte) ([]byte, error) { return s.invoke(ctx, m.FunctionID, event) },
			Checkpoint: s.StreamFiles()[0],
			Failures:   s.StreamFiles()[1],
			Log:        logs.With("mapping", m.LogicalID),
		}
		wg.Go(func() {
			if err := p.Run(ctx); err != nil {
				logs.LogAttrs(ctx, slog.LevelError, "the stream's mapping stopped", slog.String("mapping", m.LogicalID), slog.String("error", err.Error()))
			}
		})
	}
	s.streams = wg.Wait
	return nil
}

// StreamFiles are the stream mapping's checkpoint and failure files.
func (s *Stack) StreamFiles() [2]string {
	return [2]string{s.streamFile(s.cfg.StreamCheckpoint, checkpointFile), s.streamFile(s.cfg.StreamFailures, failuresFile)}
}

// streamFile is the file set, else name beside the settings file.
func (s *Stack) streamFile(set, name string) string {
	if set != "" {
		return set
	}
	return filepath.Join(filepath.Dir(s.cfg.SettingsFile), name)
}
