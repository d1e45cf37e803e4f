// Package app builds every function, once per execution environment,
// from one Config read once from the environment (FromEnv): the clients,
// the one executor and trigger runner, the services, and the route table
// of the API functions by logical id (Functions.Routes). The functions'
// mains call Run (or, for the two that hold webhook secrets, package
// keyed's), and the test harness builds the same Functions over its own
// clients (Build). Only the functions that hold webhook secrets link KMS:
// this package declares their keys and leaves building them to keyed.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/hook"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/lookup"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/startapi"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/triggerapi"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
)

// The functions, by their logical ids in template.yaml.
const (
	SessionStart     = "SessionStartFunction"
	AllocationLookup = "AllocationLookupFunction"
	Triggers         = "TriggersFunction"
	TriggerHook      = "TriggerHookFunction"
	TriggerFire      = "TriggerFireFunction"
)

// Parts are what the functions are built on.
type Parts struct {
	Log      *slog.Logger
	Table    *store.Table
	Settings *settings.Settings
	// Secrets are the webhook secrets' keys, nil in a function that holds
	// none.
	Secrets triggerapi.Secrets
	// Metrics is the execution environment's part of each log line's
	// metrics (the firing's; an API's goes on its router).
	Metrics *invocation.Metrics
	// Concurrency bounds how many due triggers the firing fires at a time.
	Concurrency int
}

// Functions are every function's services, sharing one executor and one
// trigger runner.
type Functions struct {
	Start    *commit.Executor
	Runs     *triggerrun.Runner
	Lookup   *lookup.Service
	Triggers *triggerapi.Service
	Hooks    *hook.Service
	Firing   *firing.Firing
}

// Build builds the functions on p. Nothing here does I/O.
func Build(p Parts) *Functions {
	exec := &commit.Executor{Table: p.Table, Settings: p.Settings}
	runs := &triggerrun.Runner{Start: exec, Table: p.Table, Secrets: p.Secrets}
	return &Functions{
		Start:    exec,
		Runs:     runs,
		Lookup:   &lookup.Service{Table: p.Table, Settings: p.Settings},
		Triggers: &triggerapi.Service{Table: p.Table, Settings: p.Settings, Secrets: p.Secrets, Runs: runs},
		Hooks:    &hook.Service{Table: p.Table, Settings: p.Settings, Secrets: p.Secrets, Runs: runs},
		Firing: &firing.Firing{Table: p.Table, Settings: p.Settings, Runs: runs, Log: p.Log,
			Concurrency: p.Concurrency, Metrics: p.Metrics},
	}
}

// Routes are the routes of each API function, by its logical id: the one
// table of them, which tests hold to template.yaml's, the API document's
// and events/.
func (f *Functions) Routes() map[string][]httpapi.Route {
	return map[string][]httpapi.Route{
		SessionStart:     {startapi.Route(f.Start)},
		AllocationLookup: f.Lookup.Routes(),
		Triggers:         f.Triggers.Routes(),
		TriggerHook:      f.Hooks.Routes(),
	}
}

// Run builds the function id from the environment, once per execution
// environment, and hands its handler to the Lambda runtime.
func Run(id string) { RunWith(id, nil) }

// RunWith is Run for a function that holds webhook secrets, whose keys
// keys builds from the configuration. A function that cannot read its
// configuration or be built logs one JSON line at level ERROR with the
// cause (which names variables, never their secret values) and exits
// with status 1, so that Lambda reports the init as failed.
func RunWith(id string, keys func(Config) (triggerapi.Secrets, error)) {
	tuneGC()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	handler, err := handler(id, log, keys)
	if err != nil {
		log.LogAttrs(context.Background(), slog.LevelError, "init", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(handler)
}

// Parts are the parts the configuration names: the table's and the
// settings' clients, and the execution environment's metrics. Nothing
// here does I/O.
func (c Config) Parts(log *slog.Logger) Parts {
	return Parts{
		Log:         log,
		Table:       store.New(dynamodb.NewFromConfig(c.AWS("DYNAMODB"), store.Counting), c.Table),
		Settings:    settings.New(ssm.NewFromConfig(c.AWS("SSM")), c.SettingsPath, c.SettingsTTL),
		Metrics:     invocation.NewMetrics(c.Function, c.Version),
		Concurrency: c.Concurrency,
	}
}

// handler is the handler of the function id, built from the environment.
func handler(id string, log *slog.Logger, keys func(Config) (triggerapi.Secrets, error)) (any, error) {
	c, err := FromEnv()
	if err != nil {
		return nil, err
	}
	p := c.Parts(log)
	if keys != nil {
		if p.Secrets, err = keys(c); err != nil {
			return nil, err
		}
	}
	fns := Build(p)
	if id == TriggerFire {
		return fns.Firing.Handle, nil
	}
	routes, ok := fns.Routes()[id]
	if !ok {
		return nil, fmt.Errorf("no function %q", id)
	}
	return httpapi.New(log, routes...).WithMetrics(p.Metrics).Handle, nil
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
