// Package lambdaenv builds, once per execution environment, what every
// function needs: the JSON logger, the table, and the cached settings, from
// the environment the template sets (TABLE_NAME, CONFIG_PATH,
// CONFIG_TTL_SECONDS). The AWS clients come from the default configuration,
// which also honours AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SSM.
package lambdaenv

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
)

// The environment variables a function reads; template.yaml sets them.
const (
	VarTable     = "TABLE_NAME"
	VarConfig    = "CONFIG_PATH"
	VarConfigTTL = "CONFIG_TTL_SECONDS"
)

// Variables are the names of every variable a function reads.
var Variables = []string{VarTable, VarConfig, VarConfigTTL}

// attemptTimeout bounds one attempt of an AWS request.
const attemptTimeout = 2 * time.Second

// maxIdleConns is how many idle connections to one endpoint the clients
// keep: the SDK keeps 10, fewer than the firing's default concurrency.
const maxIdleConns = 64

// Env is a function's shared wiring.
type Env struct {
	Log      *slog.Logger
	Table    *store.Table
	Settings *settings.Settings
}

// Start loads the environment once per execution environment (a function
// that cannot load it stops), and hands the handler that handler builds
// from it to the Lambda runtime.
func Start(handler func(env *Env) any) {
	env, err := Load(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(handler(env))
}

// Load reads the environment and builds the clients.
func Load(ctx context.Context) (*Env, error) {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	table, path := os.Getenv(VarTable), os.Getenv(VarConfig)
	if table == "" || path == "" {
		return nil, fmt.Errorf("%s and %s must be set", VarTable, VarConfig)
	}
	ttl, err := settings.ParseTTL(os.Getenv(VarConfigTTL))
	if err != nil {
		return nil, err
	}
	// A stuck attempt gives way to the SDK's retries well within the
	// function's timeout. Connections are kept for as many requests at once
	// as the firing sends (FIRING_CONCURRENCY), so that none is opened again
	// per request.
	httpClient := awshttp.NewBuildableClient().WithTimeout(attemptTimeout).
		WithTransportOptions(func(t *http.Transport) { t.MaxIdleConnsPerHost = maxIdleConns })
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(httpClient))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	return &Env{
		Log:      logger,
		Table:    store.New(dynamodb.NewFromConfig(cfg, store.Counting), table),
		Settings: settings.New(ssm.NewFromConfig(cfg), path, ttl),
	}, nil
}
