// Package lambdaenv builds, once per execution environment, what every
// function needs: the JSON logger, the table, the cached settings, and the
// environment's metrics, from the environment the template sets
// (TABLE_NAME, CONFIG_PATH, CONFIG_TTL_SECONDS) and the one Lambda sets
// (the region, the credentials of the function's role, the function's
// name and version), and the configuration of the clients only some
// functions build (Env.Config: the webhook secrets' KMS client), so that
// the others do not link them. It does not load the SDK's default
// configuration: its credential chain links the SDK's STS, SSO and sign-in
// clients, whose initialisation and file reads cost every cold start more
// than the rest of this package (docs/performance.md), and a function's
// credentials are always in its environment.
package lambdaenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
)

// The environment variables a function reads; template.yaml sets them.
const (
	varTable     = "TABLE_NAME"
	varConfig    = "CONFIG_PATH"
	varConfigTTL = "CONFIG_TTL_SECONDS"
)

// Variables are the names of every variable a function reads.
var Variables = []string{varTable, varConfig, varConfigTTL}

// varFunction and varVersion are the function's name and the version of
// it that runs, which Lambda sets.
const (
	varFunction = "AWS_LAMBDA_FUNCTION_NAME"
	varVersion  = "AWS_LAMBDA_FUNCTION_VERSION"
)

// unnamed is the Function dimension of a function whose name is not set,
// unpublished the Version dimension of one whose version is not: the
// version Lambda gives a function's code before any is published.
const (
	unnamed     = "local"
	unpublished = "$LATEST"
)

// attemptTimeout bounds one attempt of an AWS request.
const attemptTimeout = 2 * time.Second

// maxIdleConns is how many idle connections to one endpoint the clients
// keep: the SDK keeps 10, fewer than the firing's requests at once
// (FIRING_CONCURRENCY, at most firing.MaxConcurrency, the same number).
const maxIdleConns = 256

// writeBuffer is the size of a connection's write buffer: more than a
// request of the functions', headers and body.
const writeBuffer = 64 << 10

// Env is a function's shared wiring.
type Env struct {
	Log      *slog.Logger
	Table    *store.Table
	Settings *settings.Settings
	// Metrics is the execution environment's part in the metrics of each
	// log line: its Function dimension is AWS_LAMBDA_FUNCTION_NAME, which
	// Lambda always sets (the local stack sets it to the logical id). Where
	// it is not set, as when a bootstrap is run by hand, the dimension is
	// "local": the line keeps the members it has in Lambda, under a name that
	// says where it ran rather than failing a start the metrics do not need.
	// Its Version dimension is AWS_LAMBDA_FUNCTION_VERSION, the version the
	// alias live ran, "$LATEST" where it is not set.
	Metrics *invocation.Metrics

	// aws is every client's configuration but its endpoint (Config).
	aws aws.Config
}

// Start loads the environment and builds the handler from it, once per
// execution environment, and hands the handler to the Lambda runtime. A
// function that cannot load its environment or build its handler logs one
// JSON line at level ERROR with the cause (which names variables, never
// their secret values) and exits with status 1, so that Lambda reports the
// init as failed.
func Start(build func(env *Env) (any, error)) {
	tuneGC()
	env, err := Load()
	var handler any
	if err == nil {
		handler, err = build(env)
	}
	if err != nil {
		newLogger().LogAttrs(context.Background(), slog.LevelError, "init", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(handler)
}

// GCPercent is the functions' collector target (GOGC): a collection when
// the heap has grown to five times what is live, rather than Go's
// default of twice. A burst of firings allocates about 70 KB a trigger
// and keeps a few MB live: at Go's default the collector takes a quarter
// of its CPU, at 400 a third of that (docs/performance.md).
const GCPercent = 400

// memoryShare is the share of the function's memory that the heap is held
// to (a soft limit, GOMEMLIMIT), however far GCPercent lets it grow.
const memoryShare = 0.75

// tuneGC sets the collector as the functions run it: GCPercent, under a
// soft limit of memoryShare of the function's memory
// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, in MB, which Lambda sets). GOGC or
// GOMEMLIMIT, when set, are left as they say.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	if mb, err := strconv.Atoi(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")); err == nil && mb > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(float64(mb<<20) * memoryShare))
	}
}

// newLogger is the functions' logger: JSON lines on standard output.
func newLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(os.Stdout, nil)) }

// Load reads the environment and builds the clients. The region and the
// credentials are those Lambda sets in the environment (AWS_REGION,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); an
// endpoint is the service's own unless AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SSM or AWS_ENDPOINT_URL sets another, as the SDK's
// default configuration reads them. The function's name and version are
// AWS_LAMBDA_FUNCTION_NAME and AWS_LAMBDA_FUNCTION_VERSION, read once here.
// Nothing here does I/O.
func Load() (*Env, error) {
	table, path := os.Getenv(varTable), os.Getenv(varConfig)
	if table == "" || path == "" {
		return nil, fmt.Errorf("%s and %s must be set", varTable, varConfig)
	}
	ttl, err := settings.ParseTTL(os.Getenv(varConfigTTL))
	if err != nil {
		return nil, err
	}
	region := cmp.Or(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if region == "" || key == "" || secret == "" {
		return nil, errors.New("AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
	}
	creds := aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN")))
	e := &Env{
		aws:     aws.Config{Region: region, Credentials: creds, HTTPClient: HTTPClient()},
		Log:     newLogger(),
		Metrics: invocation.NewMetrics(cmp.Or(os.Getenv(varFunction), unnamed), cmp.Or(os.Getenv(varVersion), unpublished)),
	}
	e.Table = store.New(dynamodb.NewFromConfig(e.Config("DYNAMODB"), store.Counting), table)
	e.Settings = settings.New(ssm.NewFromConfig(e.Config("SSM")), path, ttl)
	return e, nil
}

// HTTPClient is the functions' HTTP client of the AWS services. A stuck
// attempt gives way to the SDK's retries well within the function's
// timeout. Connections are kept for as many requests at once as the
// firing sends (FIRING_CONCURRENCY), so that none is opened again per
// request; and a request, headers and body, goes out in one write (the
// transport's 4 KiB buffer takes two or three for a firing's
// transaction).
func HTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTimeout(attemptTimeout).
		WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = maxIdleConns
			t.WriteBufferSize = writeBuffer
		})
}

// Config is the configuration of a client of the AWS service whose SDK id
// is service, in capitals (KMS): the environment's region and
// credentials, the functions' HTTP client, and the endpoint that
// AWS_ENDPOINT_URL_<service> or AWS_ENDPOINT_URL sets. The table's and
// the settings' clients are built on it, and so are those only some
// functions need.
func (e *Env) Config(service string) aws.Config {
	c := e.aws.Copy()
	c.BaseEndpoint = endpoint(service)
	return c
}

// endpoint is the endpoint the environment sets for a service (its SDK
// id in capitals), or nil.
func endpoint(service string) *string {
	if os.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") == "true" {
		return nil
	}
	if u := cmp.Or(os.Getenv("AWS_ENDPOINT_URL_"+service), os.Getenv("AWS_ENDPOINT_URL")); u != "" {
		return &u
	}
	return nil
}
