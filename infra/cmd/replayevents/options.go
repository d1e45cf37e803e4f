package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	lambdasdk "github.com/aws/aws-sdk-go-v2/service/lambda"
)

// The local stack's defaults (make run): its table and DynamoDB endpoint,
// which serves the stream, its failure file, its bus and API, and the
// alias of its session token key in the KMS stand-in.
const (
	localTable    = "SessionsTable"
	localEndpoint = "http://127.0.0.1:8000"
	localFailures = ".local/session-events-failures.jsonl"
	localBus      = "SessionsBus"
	localAPI      = "http://127.0.0.1:3000"
	localTokenKey = "alias/SessionTokenKey"
	localRegion   = "us-east-1"
)

// options are the command's flags.
type options struct {
	Failures        string
	Shard, From, To string
	Table, Region   string
	Endpoint        string
	Function, Alias string
	// The local stack's, for the function run here.
	KMSEndpoint, EventsEndpoint, TokenKey, Bus, APIURL string
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("replay-events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Failures, "failures", localFailures, "the failed batches: on-failure records as JSON values (lines), or `aws sqs receive-message --output json` answers")
	fs.StringVar(&o.Shard, "shard", "", "instead of -failures, one range: its shard id (with -from and -to)")
	fs.StringVar(&o.From, "from", "", "with -shard: the range's first sequence number")
	fs.StringVar(&o.To, "to", "", "with -shard: the range's last sequence number")
	fs.StringVar(&o.Table, "table", localTable, "with -shard: the table whose stream holds the range")
	fs.StringVar(&o.Region, "region", "", "AWS: read the stream and invoke -function in this region, with the credentials the SDK finds (default: the local stack)")
	fs.StringVar(&o.Endpoint, "endpoint", "", "read the stream on this DynamoDB endpoint (default: the local stack's, "+localEndpoint+", unless -region is given)")
	fs.StringVar(&o.Function, "function", "", "AWS: SessionEventsFunction's name (the stack's resource), whose alias is invoked with each batch")
	fs.StringVar(&o.Alias, "alias", "live", "AWS: the alias of -function to invoke")
	fs.StringVar(&o.KMSEndpoint, "kms-endpoint", "", "locally: the KMS stand-in, as make run prints it (kms: http://…)")
	fs.StringVar(&o.EventsEndpoint, "events-endpoint", "", "locally: the event bus stand-in, as make run prints it (events: http://…)")
	fs.StringVar(&o.TokenKey, "token-key", localTokenKey, "locally: the session token key")
	fs.StringVar(&o.Bus, "bus", localBus, "locally: the sessions' bus")
	fs.StringVar(&o.APIURL, "api-url", localAPI, "locally: the API's URL, the launch read's base")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.check(fs)
}

// check refuses flags that do not go together.
func (o options) check(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	case (o.Shard != "" || o.From != "" || o.To != "") && (o.Shard == "" || o.From == "" || o.To == ""):
		return errors.New("-shard, -from and -to go together")
	case o.Shard != "" && set["failures"]:
		return errors.New("give -failures or -shard, not both")
	case o.Region != "" && o.Endpoint != "":
		return errors.New("give -region or -endpoint, not both")
	case o.Region != "" && o.Function == "":
		return errors.New("-region needs -function: in AWS, only SessionEventsFunction's role may derive tokens and put on the bus, so the replay invokes it")
	case o.Region == "" && o.Function != "":
		return errors.New("-function goes with -region")
	case o.Region == "" && (o.KMSEndpoint == "" || o.EventsEndpoint == ""):
		return errors.New("locally, give -kms-endpoint and -events-endpoint, as make run prints them (KMS: and Events:)")
	case o.Region != "" && (o.KMSEndpoint != "" || o.EventsEndpoint != "" || set["token-key"] || set["bus"] || set["api-url"]):
		return errors.New("-kms-endpoint, -events-endpoint, -token-key, -bus and -api-url are the local stack's: in AWS the function has its own")
	}
	return nil
}

// aws is the SDK's configuration: in AWS, the default one in the region;
// locally, the local stack's region and placeholder credentials.
func (o options) aws(ctx context.Context) (aws.Config, error) {
	if o.Region != "" {
		return config.LoadDefaultConfig(ctx, config.WithRegion(o.Region))
	}
	return aws.Config{Region: localRegion, Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}, nil
}

// endpoint is the DynamoDB endpoint that serves the stream, "" for AWS's.
func (o options) endpoint() string {
	if o.Region != "" {
		return ""
	}
	return cmp.Or(o.Endpoint, localEndpoint)
}

// streams is the stream's client.
func (o options) streams(ctx context.Context) (*dynamodbstreams.Client, error) {
	cfg, err := o.aws(ctx)
	if err != nil {
		return nil, err
	}
	return dynamodbstreams.NewFromConfig(cfg, func(so *dynamodbstreams.Options) {
		if u := o.endpoint(); u != "" {
			so.BaseEndpoint = aws.String(u)
		}
	}), nil
}

// ranges are the ranges to replay: the one of -shard, in the table's
// stream, or the failure file's.
func (o options) ranges(ctx context.Context) ([]Range, error) {
	if o.Shard == "" {
		f, err := os.Open(o.Failures)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		rs, err := readFailures(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.Failures, err)
		}
		return rs, nil
	}
	cfg, err := o.aws(ctx)
	if err != nil {
		return nil, err
	}
	out, err := dynamodb.NewFromConfig(cfg, func(do *dynamodb.Options) {
		if u := o.endpoint(); u != "" {
			do.BaseEndpoint = aws.String(u)
		}
	}).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(o.Table)})
	if err != nil {
		return nil, fmt.Errorf("the table %s: %w", o.Table, err)
	}
	if out.Table.LatestStreamArn == nil {
		return nil, fmt.Errorf("the table %s has no stream", o.Table)
	}
	return []Range{{StreamARN: *out.Table.LatestStreamArn, Shard: o.Shard, From: o.From, To: o.To}}, nil
}

// deliver is how batches reach the function: in AWS, an Invoke of its
// alias; locally, its code run here on the local stack's stand-ins.
func (o options) deliver(ctx context.Context, log *slog.Logger) (Deliver, error) {
	if o.Region != "" {
		cfg, err := o.aws(ctx)
		if err != nil {
			return nil, err
		}
		return invoker(lambdasdk.NewFromConfig(cfg), o.Function, o.Alias), nil
	}
	return inProcess(o.localEnvironment(), log)
}

// localEnvironment is the environment the local stack gives
// SessionEventsFunction (infra/local's), for the function run here.
// CONFIG_PATH is required of every function; this one reads no setting.
func (o options) localEnvironment() map[string]string {
	return map[string]string{
		"TABLE_NAME": o.Table, "CONFIG_PATH": "/replay-events",
		"AWS_REGION": localRegion, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": o.endpoint(), "AWS_ENDPOINT_URL_KMS": o.KMSEndpoint,
		"AWS_ENDPOINT_URL_EVENTBRIDGE": o.EventsEndpoint, "AWS_LAMBDA_FUNCTION_NAME": "SessionEventsFunction",
		"SESSION_TOKEN_KEY_ID": o.TokenKey, "EVENT_BUS_NAME": o.Bus, "API_URL": o.APIURL,
	}
}
