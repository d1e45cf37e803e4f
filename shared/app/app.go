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
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/cloud-agent/control-plane/shared/commit"
	"github.com/cloud-agent/control-plane/shared/environmentapi"
	"github.com/cloud-agent/control-plane/shared/firing"
	"github.com/cloud-agent/control-plane/shared/hook"
	"github.com/cloud-agent/control-plane/shared/httpapi"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/lookup"
	"github.com/cloud-agent/control-plane/shared/runtimeapi"
	"github.com/cloud-agent/control-plane/shared/sessionevents"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/startapi"
	"github.com/cloud-agent/control-plane/shared/store"
	"github.com/cloud-agent/control-plane/shared/triggerapi"
	"github.com/cloud-agent/control-plane/shared/triggerrun"
)

// Function is one of the stack's functions: its logical id in
// template.yaml, the services it is built of, and its handler on them. A
// main links the code of its own function alone, which it reaches only
// through its Function (a bootstrap's size and cold start pay for no
// other): the values are static data, with no code run at init.
type Function struct {
	ID string
	// build builds the function's own services on p.
	build func(p Parts) *Functions
	// routes are an API function's routes; nil for the firing.
	routes func(*Functions) []httpapi.Route
	// handle is its handler on its services, built once per execution
	// environment.
	handle func(fn Function, f *Functions, p Parts) any
}

// The functions.
var (
	SessionStart = Function{ID: "SessionStartFunction", handle: serve,
		build:  func(p Parts) *Functions { return &Functions{Start: p.executor()} },
		routes: func(f *Functions) []httpapi.Route { return []httpapi.Route{startapi.Route(f.Start)} }}
	AllocationLookup = Function{ID: "AllocationLookupFunction", handle: serve,
		build:  func(p Parts) *Functions { return &Functions{Lookup: p.lookup()} },
		routes: func(f *Functions) []httpapi.Route { return f.Lookup.Routes() }}
	Triggers = Function{ID: "TriggersFunction", handle: serve,
		build:  func(p Parts) *Functions { f := p.runs(); f.Triggers = p.triggers(f.Runs); return f },
		routes: func(f *Functions) []httpapi.Route { return f.Triggers.Routes() }}
	TriggerHook = Function{ID: "TriggerHookFunction", handle: serve,
		build:  func(p Parts) *Functions { f := p.runs(); f.Hooks = p.hooks(f.Runs); return f },
		routes: func(f *Functions) []httpapi.Route { return f.Hooks.Routes() }}
	Environments = Function{ID: "EnvironmentsFunction", handle: serve,
		build:  func(p Parts) *Functions { return &Functions{Environments: p.environments()} },
		routes: func(f *Functions) []httpapi.Route { return f.Environments.Routes() }}
	Runtime = Function{ID: "RuntimeFunction", handle: serve,
		build:  func(p Parts) *Functions { return &Functions{Runtime: p.runtime()} },
		routes: func(f *Functions) []httpapi.Route { return f.Runtime.Routes() }}
	SessionEvents = Function{ID: "SessionEventsFunction",
		build:  func(p Parts) *Functions { return &Functions{Events: p.events()} },
		handle: func(_ Function, f *Functions, _ Parts) any { return f.Events.Handle }}
	TriggerFire = Function{ID: "TriggerFireFunction",
		build:  func(p Parts) *Functions { f := p.runs(); f.Firing = p.firing(f.Runs); return f },
		handle: func(_ Function, f *Functions, _ Parts) any { return f.Firing.Handle }}
)

// serve is an API function's handler: its routes' router, with the
// execution environment's metrics.
func serve(fn Function, f *Functions, p Parts) any {
	return httpapi.New(p.Log, fn.routes(f)...).WithMetrics(p.Metrics).Handle
}

// Parts are what the functions are built on.
type Parts struct {
	Log      *slog.Logger
	Table    *store.Table
	Settings *settings.Settings
	// Secrets are the webhook secrets' keys, nil in a function that holds
	// none.
	Secrets triggerapi.Secrets
	// Variables seal environments' secret variables, nil but in the
	// environments' function.
	Variables environmentapi.Sealer
	// Tokens derive sessions' tokens, nil but in the session events and
	// runtime functions; Bus and APIURL announce sessions, nil but in the
	// session events function; SecretsKey is the ARN of the environments'
	// key, which the runtime routes name beside each secret's ciphertext.
	Tokens     sessionevents.Tokens
	Bus        sessionevents.Bus
	APIURL     string
	SecretsKey string
	// Metrics is the execution environment's part of each log line's
	// metrics (the firing's; an API's goes on its router).
	Metrics *invocation.Metrics
	// Concurrency bounds how many due triggers the firing fires at a time.
	Concurrency int
}

// Functions are every function's services, sharing one executor and one
// trigger runner.
type Functions struct {
	Start        *commit.Executor
	Runs         *triggerrun.Runner
	Lookup       *lookup.Service
	Triggers     *triggerapi.Service
	Hooks        *hook.Service
	Firing       *firing.Firing
	Environments *environmentapi.Service
	Events       *sessionevents.Service
	Runtime      *runtimeapi.Service
}

// Build builds every function on p, as one execution environment would
// serve them all (the test harness's): one executor and one trigger
// runner shared. Nothing here does I/O.
func Build(p Parts) *Functions {
	f := p.runs()
	f.Lookup, f.Triggers, f.Hooks, f.Firing = p.lookup(), p.triggers(f.Runs), p.hooks(f.Runs), p.firing(f.Runs)
	f.Environments, f.Events, f.Runtime = p.environments(), p.events(), p.runtime()
	return f
}

func (p Parts) executor() *commit.Executor {
	return &commit.Executor{Table: p.Table, Settings: p.Settings}
}

// runs is the executor and the trigger runner on it.
func (p Parts) runs() *Functions {
	exec := p.executor()
	return &Functions{Start: exec, Runs: &triggerrun.Runner{Start: exec, Table: p.Table, Secrets: p.Secrets}}
}

func (p Parts) lookup() *lookup.Service {
	return &lookup.Service{Table: p.Table, Settings: p.Settings}
}

func (p Parts) triggers(runs *triggerrun.Runner) *triggerapi.Service {
	return &triggerapi.Service{Table: p.Table, Settings: p.Settings, Secrets: p.Secrets, Runs: runs}
}

func (p Parts) hooks(runs *triggerrun.Runner) *hook.Service {
	return &hook.Service{Table: p.Table, Settings: p.Settings, Secrets: p.Secrets, Runs: runs}
}

func (p Parts) environments() *environmentapi.Service {
	return &environmentapi.Service{Table: p.Table, Settings: p.Settings, Secrets: p.Variables}
}

func (p Parts) events() *sessionevents.Service {
	return &sessionevents.Service{Tokens: p.Tokens, Bus: p.Bus, APIURL: p.APIURL, Log: p.Log, Metrics: p.Metrics}
}

func (p Parts) runtime() *runtimeapi.Service {
	return &runtimeapi.Service{Table: p.Table, Settings: p.Settings, Tokens: p.Tokens, SecretsKey: p.SecretsKey}
}

func (p Parts) firing(runs *triggerrun.Runner) *firing.Firing {
	return &firing.Firing{Table: p.Table, Settings: p.Settings, Runs: runs, Log: p.Log, Concurrency: p.Concurrency, Metrics: p.Metrics}
}

// Routes are the routes of each API function, by its logical id: the one
// table of them, which tests hold to template.yaml's, the API document's
// and events/.
func (f *Functions) Routes() map[string][]httpapi.Route {
	m := map[string][]httpapi.Route{}
	for _, fn := range []Function{SessionStart, AllocationLookup, Triggers, TriggerHook, Environments, Runtime} {
		m[fn.ID] = fn.routes(f)
	}
	return m
}

// Run builds the function fn from the environment, once per execution
// environment, and hands its handler to the Lambda runtime.
func Run(fn Function) { RunWith(fn, nil) }

// RunWith is Run for a function that holds KMS keys (webhook secrets, or
// environments' secret variables), which keys puts on its parts from the
// configuration. A function that cannot read its
// configuration or be built logs one JSON line at level ERROR with the
// cause (which names variables, never their secret values) and exits
// with status 1, so that Lambda reports the init as failed.
func RunWith(fn Function, keys func(Config, *Parts) error) {
	tuneGC()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	handler, err := handler(fn, log, keys)
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

// handler is the handler of the function fn, built from the environment.
func handler(fn Function, log *slog.Logger, keys func(Config, *Parts) error) (any, error) {
	c, err := FromEnv()
	if err != nil {
		return nil, err
	}
	return c.Handler(fn, log, keys)
}

// Handler is the handler of the function fn built on c, as Run builds it
// in Lambda, with keys (nil: none) putting its KMS keys on its parts.
// Nothing here does I/O.
func (c Config) Handler(fn Function, log *slog.Logger, keys func(Config, *Parts) error) (any, error) {
	p := c.Parts(log)
	if keys != nil {
		if err := keys(c, &p); err != nil {
			return nil, err
		}
	}
	return fn.handle(fn, fn.build(p), p), nil
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
