package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cloud-agent/control-plane/infra/local/dynamo"
	"github.com/cloud-agent/control-plane/infra/local/eventbus"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/local/lambdarun"
	"github.com/cloud-agent/control-plane/infra/local/localdb"
	"github.com/cloud-agent/control-plane/infra/local/paramstore"
	"github.com/cloud-agent/control-plane/infra/local/schedule"
	"github.com/cloud-agent/control-plane/infra/template"
	"github.com/cloud-agent/control-plane/shared/app"
)

// Config is what `make run` starts.
type Config struct {
	Repo         string // the repository's folder: template.yaml and the Makefile
	DynamoAddr   string // the embedded endpoint's address, when DynamoURL is empty
	DynamoURL    string // an endpoint to use instead of the embedded one
	APIAddr      string
	SettingsFile string // created from the template's parameters when missing
	// KeysFile holds the KMS stand-in's keys, created on the first start
	// and read on the next; "" makes new keys at each start, in memory.
	KeysFile string
	// EventsAddr is where the event bus stand-in answers PutEvents; ""
	// is a free loopback port.
	EventsAddr string
	// EventBus is the bus's name; "" is EventBus, the name it has locally.
	EventBus string
	DataFile string // "" keeps the data in memory only
	// StreamCheckpoint and StreamFailures are the stream mapping's
	// checkpoint and local failure queue; "" puts them beside the
	// settings file (stream-checkpoint.json,
	// session-events-failures.jsonl).
	StreamCheckpoint, StreamFailures string
	// Parameters are template.yaml's parameters over their defaults (for
	// FiringSchedules, say: the local stack runs each schedule the
	// template has with them).
	Parameters map[string]string
	// Logs takes the stack's lines and every function's, written from
	// several goroutines and processes at once: it must be safe for that
	// (an *os.File is; a bytes.Buffer is not).
	Logs io.Writer
	// Progress, when set, takes a line for each step of the start that
	// can take long: each function's build, the emulator's.
	Progress io.Writer
	// Verbose adds the emulator's own INFO lines to Logs (each phase of
	// an initialisation and of an invocation); without it, Logs has the
	// functions' lines, the emulator's START, END and REPORT lines and
	// its warnings.
	Verbose bool
}

// EventBus is the event bus's name locally: its logical id in
// template.yaml, as the table's name is the table's.
const EventBus = "SessionsBus"

// DynamoAddr is where `make run` serves its embedded DynamoDB endpoint,
// and where `make audit` reads the local stack's table.
const DynamoAddr = "127.0.0.1:8000"

// TuneGC sets the collector of the stack's process, which serves the
// embedded endpoint, as the functions set theirs: GOGC
// app.GCPercent, unless GOGC is set (GOMEMLIMIT, when set, holds as
// Go reads it). At Go's default the collector took about an eighth of
// the process's CPU in a burst of firings, at 400 next to none
// (BenchmarkStackBurst, docs/decisions.md).
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(app.GCPercent)
	}
}

// Stack is the local stack: DynamoDB, the settings, KMS and event bus
// stand-ins, every function under the runtime emulator, and the gateway.
type Stack struct {
	APIURL    string
	DynamoURL string
	KMSURL    string    // the KMS stand-in, on a loopback port of its own
	Keys      *kms.Keys // its keys
	// EventsURL is where the event bus stand-in answers PutEvents, on a
	// loopback port of its own; the gateway lists its events.
	EventsURL string
	Bus       *eventbus.Bus
	Functions []template.Function
	cfg       Config
	endpoint  *dynamo.Endpoint
	client    *dynamodb.Client
	ssm       *http.Server
	kmsServer *http.Server
	events    *http.Server
	api       *http.Server
	lambdas   map[string]*lambdarun.Lambda
	buildDir  string
	stop      context.CancelFunc
	schedules func() // waits for the schedules' invocations
	streams   func() // waits for the stream's pollers
	// StreamARN is the table's stream, which the pollers read.
	StreamARN string
	loaded    bool // the data file is in the table: saving it keeps it
	closeOnce sync.Once
	closeErr  error
}

// Start starts the stack. Close stops it. When Start fails, what it had
// started is stopped.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	s := &Stack{cfg: cfg, lambdas: map[string]*lambdarun.Lambda{}}
	if err := s.start(ctx); err != nil {
		_ = s.Close(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Stack) start(ctx context.Context) (err error) {
	cfg := s.cfg
	if err := loopbackOnly(cfg.DynamoAddr, cfg.APIAddr, cfg.EventsAddr); err != nil {
		return err
	}
	tpl, err := template.LoadWith(filepath.Join(cfg.Repo, "template.yaml"), cfg.Parameters)
	if err != nil {
		return err
	}
	if s.Functions, err = template.Functions(tpl); err != nil {
		return err
	}
	if err := templateKeys(tpl); err != nil {
		return err
	}
	if err := s.startTable(ctx, tpl); err != nil {
		return err
	}
	ssmURL, err := s.startStandIns(tpl)
	if err != nil {
		return err
	}
	// The API's address is taken first: the session events function
	// announces launch reads at its URL.
	apiLn, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return err
	}
	s.APIURL = "http://" + apiLn.Addr().String()
	if err := s.startFunctions(ctx, ssmURL); err != nil {
		apiLn.Close()
		return err
	}
	logs := slog.New(slog.NewJSONHandler(cfg.Logs, nil))
	var runCtx context.Context
	runCtx, s.stop = context.WithCancel(context.Background())
	gw := &gateway.Gateway{Routes: template.Routes(s.Functions), Scheduled: map[string]bool{}, Invoke: s.invoke, Log: logs,
		Events: untilStopped(runCtx, s.Bus.ServeLocal)}
	for _, fn := range s.Functions {
		gw.Scheduled[fn.LogicalID] = len(fn.Schedules) > 0
	}
	s.api = serveOn(apiLn, gw)
	s.schedules = schedule.Run(runCtx, s.Functions, s.invoke, logs)
	return s.startStreams(runCtx, tpl, logs)
}

// untilStopped serves h with requests that end when stop does too: a
// list of the bus's events still waiting for one does not hold the
// stack's Close.
func untilStopped(stop context.Context, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		h(w, r.WithContext(ctx))
	})
}

// startTable starts the embedded endpoint (unless the stack has one to
// use), creates the template's table there when it is missing, and loads
// the data file.
func (s *Stack) startTable(ctx context.Context, tpl *template.Template) error {
	cfg := s.cfg
	s.DynamoURL = cfg.DynamoURL
	if s.DynamoURL == "" {
		var err error
		if s.endpoint, err = dynamo.Start(cfg.DynamoAddr); err != nil {
			return fmt.Errorf("starting the DynamoDB endpoint: %w", err)
		}
		s.DynamoURL = s.endpoint.URL
	}
	s.client = localdb.Client(s.DynamoURL)
	in, err := template.CreateTableInput(tpl, template.TableLogicalID, template.TableLogicalID)
	if err != nil {
		return err
	}
	// The time to live, as the template gives the table in AWS (the
	// embedded endpoint sweeps expired items once a minute; the code
	// judges expiresAt itself, as DynamoDB deletes them days late).
	ttl, err := template.TimeToLiveInput(tpl, template.TableLogicalID, template.TableLogicalID)
	if err != nil {
		return err
	}
	// The table is created without its stream, which startStreams gives
	// it once the data file's items are in: loading them announces
	// nothing.
	in.StreamSpecification = nil
	if _, err := template.EnsureTable(ctx, s.client, in, ttl); err != nil {
		return err
	}
	if cfg.DataFile != "" {
		// Fail now, not at the save when the stack stops, if the file
		// cannot be written.
		if err := writable(cfg.DataFile); err != nil {
			return err
		}
		if _, err := localdb.LoadItems(ctx, s.client, template.TableLogicalID, cfg.DataFile); err != nil {
			return err
		}
		s.loaded = true
	}
	return nil
}

// startStandIns serves the settings' Parameter Store stand-in (seeded
// from the template's parameters), the KMS stand-in and the event bus
// stand-in: the URL of the first, the others' in s.KMSURL and s.EventsURL.
func (s *Stack) startStandIns(tpl *template.Template) (string, error) {
	cfg := s.cfg
	configPath := ""
	for _, fn := range s.Functions {
		configPath = fn.Environment["CONFIG_PATH"]
	}
	if err := paramstore.Seed(cfg.SettingsFile, template.Settings(tpl, configPath)); err != nil {
		return "", err
	}
	ssmURL, srv, err := serve("127.0.0.1:0", &paramstore.Server{File: cfg.SettingsFile, Path: configPath})
	if err != nil {
		return "", err
	}
	s.ssm = srv
	if cfg.KeysFile == "" {
		s.Keys, err = kms.Generate()
	} else {
		s.Keys, err = kms.Open(cfg.KeysFile)
	}
	if err != nil {
		return "", err
	}
	if s.KMSURL, s.kmsServer, err = serve("127.0.0.1:0", &kms.Server{Keys: s.Keys}); err != nil {
		return "", err
	}
	s.Bus = eventbus.New(cmp.Or(cfg.EventBus, EventBus), cfg.Logs)
	if s.EventsURL, s.events, err = serve(cmp.Or(cfg.EventsAddr, "127.0.0.1:0"), s.Bus); err != nil {
		return "", fmt.Errorf("starting the event bus stand-in: %w", err)
	}
	return ssmURL, nil
}

func (s *Stack) startFunctions(ctx context.Context, ssmURL string) error {
	dir, err := os.MkdirTemp("", "control-plane-functions-")
	if err != nil {
		return err
	}
	s.buildDir = dir
	progress := s.cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	var ids []string
	for _, fn := range s.Functions {
		ids = append(ids, fn.LogicalID)
	}
	if err := lambdarun.Build(ctx, progress, s.cfg.Repo, dir, ids...); err != nil {
		return err
	}
	emulator, err := lambdarun.EmulatorPath(ctx, progress, s.cfg.Repo)
	if err != nil {
		return err
	}
	level := lambdarun.EmulatorWarnings
	if s.cfg.Verbose {
		level = lambdarun.EmulatorInfo
	}
	for _, fn := range s.Functions {
		l, err := lambdarun.Start(emulator, fn.LogicalID, filepath.Join(dir, fn.LogicalID, "bootstrap"), s.environment(fn, ssmURL), fn.Timeout, s.cfg.Logs, level)
		if err != nil {
			return err
		}
		s.lambdas[fn.LogicalID] = l
	}
	return nil
}

// templateKeys checks that each AWS::KMS::Key of the template is a key
// the KMS stand-in holds (kms.Specs), of the same kind: a key added to
// the template only is refused here, not met as NotFound by a function.
func templateKeys(tpl *template.Template) error {
	for id, k := range tpl.GetAllKMSKeyResources() {
		spec, usage := cmp.Or(aws.ToString(k.KeySpec), kms.SpecSymmetric), cmp.Or(aws.ToString(k.KeyUsage), kms.UsageEncrypt)
		i := slices.IndexFunc(kms.Specs, func(sp kms.Spec) bool { return sp.LogicalID == id })
		if i < 0 {
			return fmt.Errorf("template.yaml's KMS key %s is not one the local KMS stand-in holds: add it to kms.Specs (infra/local/kms)", id)
		}
		if sp := kms.Specs[i]; sp.KeySpec != spec || sp.KeyUsage != usage {
			return fmt.Errorf("template.yaml's KMS key %s is %s/%s, the local KMS stand-in's is %s/%s (kms.Specs, infra/local/kms)", id, spec, usage, sp.KeySpec, sp.KeyUsage)
		}
	}
	return nil
}

// environment is a function's: lambdarun's, with the KMS stand-in's
// endpoint and key ids, the event bus stand-in's endpoint and the API's
// URL over any of the template's.
func (s *Stack) environment(fn template.Function, ssmURL string) []string {
	more := append(s.Keys.Environment(s.KMSURL), "AWS_ENDPOINT_URL_EVENTBRIDGE="+s.EventsURL, "API_URL="+s.APIURL)
	return lambdarun.Environment(fn, s.DynamoURL, ssmURL, more...)
}

var errNoFunction = errors.New("no such function")

func (s *Stack) invoke(ctx context.Context, id string, event []byte) ([]byte, error) {
	l, ok := s.lambdas[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", errNoFunction, id)
	}
	return l.Invoke(ctx, event)
}

// Close stops the stack: the gateway, the schedules and the functions
// first, so that nothing writes any more; then, when a data file is set
// and was loaded, it saves the table (with its own time, whatever is left
// of ctx), and stops the rest. Calls after the first return its result.
func (s *Stack) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.close(ctx) })
	return s.closeErr
}

func (s *Stack) close(ctx context.Context) error {
	var errs []error
	if s.stop != nil {
		s.stop()
	}
	if s.api != nil {
		errs = append(errs, s.api.Shutdown(ctx))
	}
	if s.streams != nil {
		s.streams() // a batch being handed over ends first
	}
	for _, l := range s.lambdas {
		l.Close()
	}
	if s.schedules != nil {
		s.schedules()
	}

	if s.loaded {
		sctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
		if err := saveAtomically(sctx, s.client, s.cfg.DataFile); err != nil {
			errs = append(errs, fmt.Errorf("saving %s: %w", s.cfg.DataFile, err))
		}
		cancel()
	}
	if s.ssm != nil {
		errs = append(errs, s.ssm.Shutdown(ctx))
	}
	if s.kmsServer != nil {
		errs = append(errs, s.kmsServer.Shutdown(ctx))
	}
	if s.events != nil {
		errs = append(errs, s.events.Shutdown(ctx))
	}
	if s.buildDir != "" {
		errs = append(errs, os.RemoveAll(s.buildDir))
	}
	if s.endpoint != nil {
		errs = append(errs, s.endpoint.Close(ctx))
	}
	return errors.Join(errs...)
}

// saveTimeout bounds the save of the data file.
const saveTimeout = time.Minute

// writable makes the data file's folder and checks that a file can be
// written beside the data file, where the save writes first.
func writable(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		return err
	}
	return os.Remove(tmp)
}

// saveAtomically saves the table to a new file beside path and renames it
// over path.
func saveAtomically(ctx context.Context, c *dynamodb.Client, path string) error {
	tmp := path + ".new"
	if _, err := localdb.SaveItems(ctx, c, template.TableLogicalID, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func serve(addr string, h http.Handler) (string, *http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	return "http://" + ln.Addr().String(), serveOn(ln, h), nil
}

// serveOn serves h on ln until the server is shut down.
func serveOn(ln net.Listener, h http.Handler) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv
}

// loopbackOnly refuses addresses that are not on the loopback interface:
// the local stack trusts unverified tokens.
func loopbackOnly(addrs ...string) error {
	for _, a := range addrs {
		if a == "" {
			continue
		}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			return err
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("%s is not a loopback address", a)
		}
	}
	return nil
}
