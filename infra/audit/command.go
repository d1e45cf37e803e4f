package audit

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/schollz/progressbar/v3"

	"github.com/cloud-agent/control-plane/shared/allocation"
	"github.com/cloud-agent/control-plane/shared/invocation"
	"github.com/cloud-agent/control-plane/shared/settings"
	"github.com/cloud-agent/control-plane/shared/store"
)

// The local stack's table and its DynamoDB endpoint (make run), read
// unless the flags name another; TestLocalStack ties them to the stack's.
const (
	localTable    = "SessionsTable"
	localEndpoint = "http://127.0.0.1:8000"
)

// Options are the command's flags.
type Options struct {
	Table, Region, Endpoint string
	Segments                int
	JSON                    bool
	RewriteTriggers, DryRun bool
	// ConfigPath reads the settings from Parameter Store under it; empty
	// reads the local stack's settings file, SettingsFile.
	ConfigPath, SettingsFile string
	// Progress shows a progress bar on Progress (a terminal).
	Progress io.Writer
}

// ParseFlags reads the command line.
func ParseFlags(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Table, "table", localTable, "the table to read")
	fs.StringVar(&o.Region, "region", "", "read the table in this AWS region, with the credentials the SDK finds (default: the local stack)")
	fs.StringVar(&o.Endpoint, "endpoint", "", "read the table on this DynamoDB endpoint (default: the local stack's, "+localEndpoint+", unless -region is given)")
	fs.IntVar(&o.Segments, "segments", 4, "scan the table in this many parallel segments (1 to 1000)")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&o.RewriteTriggers, "rewrite-triggers", false, "clear the saved allocation of every trigger and environment that falls back to the default")
	fs.BoolVar(&o.DryRun, "dry-run", false, "with -rewrite-triggers: list what would be cleared, change nothing")
	fs.StringVar(&o.ConfigPath, "config-path", "", "read the settings from SSM Parameter Store under this path (e.g. /cloud-agent/prod; default: the local settings file)")
	fs.StringVar(&o.SettingsFile, "settings", ".local/settings.json", "the local stack's settings file, when -config-path is not given")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case o.Segments < 1 || o.Segments > 1000:
		return o, errors.New("-segments must be from 1 to 1000")
	case o.DryRun && !o.RewriteTriggers:
		return o, errors.New("-dry-run goes with -rewrite-triggers")
	case o.Region != "" && o.Endpoint != "":
		return o, errors.New("give -region or -endpoint, not both")
	case o.Region != "" && o.ConfigPath == "":
		// A table in AWS is judged by its own settings, never by a local
		// file.
		return o, errors.New("-region needs -config-path: the settings under which the table is judged (e.g. /cloud-agent/prod)")
	}
	return o, nil
}

// Run audits the table the options name, and rewrites its triggers and
// environments when asked: the report goes to stdout (a table, or with
// JSON the contract's object); the table's and the settings' sources and
// the settings' warnings go to stderr, and so do the rewrite's lines when
// the report is JSON (else they follow it on stdout). It fails when a
// trigger or an environment could not be settled: run it again. A
// rewrite under a configuration path that holds no parameter is refused:
// a mistyped path would judge the table by the built-in settings.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	dynamo, params, err := clients(ctx, o)
	if err != nil {
		return err
	}
	tbl := store.New(dynamo, o.Table)
	policy, warnings, err := readPolicy(ctx, o, params)
	if err != nil {
		return err
	}
	notes := stdout
	if o.JSON {
		notes = stderr
	}
	fmt.Fprintf(stderr, "table: %s on %s\n", o.Table, tableEndpoint(dynamo))
	fmt.Fprintf(stderr, "settings: %s\n", settingsSource(o))
	for _, w := range warnings {
		fmt.Fprintf(stderr, "settings: %s\n", w)
	}
	var progress func(int)
	if o.Progress != nil {
		bar := newProgress(o.Progress, o.Table)
		defer func() { _ = bar.Finish() }()
		progress = func(n int) { _ = bar.Add(n) }
	}
	r, err := Scan(ctx, tbl, policy, o.Segments, progress)
	if err != nil {
		return fmt.Errorf("scanning %s: %w", o.Table, err)
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = r.WriteText(stdout, o.Table)
	}
	if err != nil || !o.RewriteTriggers {
		return err
	}
	return writeRewrite(notes, Rewrite(ctx, tbl, policy, r.Fallbacks, o.DryRun), o.DryRun)
}

// newProgress is the scan's progress bar on w. It renders only when Add is
// called, and Scan calls it from one goroutine at a time: the bar starts
// no goroutine of its own (with a spinner interval, progressbar v3's own
// ticker reads the bar's state unlocked while Add writes it).
func newProgress(w io.Writer, table string) *progressbar.ProgressBar {
	return progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("scanning "+table),
		progressbar.OptionShowCount(), progressbar.OptionSetItsString("items"), progressbar.OptionShowIts(), progressbar.OptionClearOnFinish(),
		progressbar.OptionSetSpinnerChangeInterval(0))
}

// tableEndpoint is the endpoint the table is read on: the one set, or the
// region's.
func tableEndpoint(c *dynamodb.Client) string {
	if o := c.Options(); o.BaseEndpoint != nil {
		return *o.BaseEndpoint
	}
	return "DynamoDB in " + c.Options().Region
}

// settingsSource says where the settings the table is judged by come from.
func settingsSource(o Options) string {
	if o.ConfigPath != "" {
		return "Parameter Store under " + o.ConfigPath
	}
	return "the local file " + o.SettingsFile + " (built-in values where it has none)"
}

// clients are the DynamoDB client of the table the options name (the
// local stack's unless -region or -endpoint says otherwise) and, with a
// configuration path, the Parameter Store client of the account the SDK
// finds.
func clients(ctx context.Context, o Options) (*dynamodb.Client, *ssm.Client, error) {
	endpoint := o.Endpoint
	if endpoint == "" && o.Region == "" {
		endpoint = localEndpoint
	}
	var dynamo *dynamodb.Client
	if o.Region == "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		// A local endpoint takes any credentials.
		dynamo = dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(endpoint),
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		})
	}
	if dynamo != nil && o.ConfigPath == "" {
		return dynamo, nil, nil
	}
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	if dynamo == nil {
		dynamo = dynamodb.NewFromConfig(cfg, func(d *dynamodb.Options) {
			if endpoint != "" {
				d.BaseEndpoint = aws.String(endpoint)
			}
		})
	}
	return dynamo, ssm.NewFromConfig(cfg), nil
}

// readPolicy reads the settings through the functions' settings code:
// from Parameter Store under the configuration path, or from the local
// settings file that the local stack serves as Parameter Store (a missing
// file is the built-in settings, as for the functions).
func readPolicy(ctx context.Context, o Options, params *ssm.Client) (*allocation.Policy, []string, error) {
	ctx, record := invocation.With(ctx)
	if o.ConfigPath == "" {
		p, err := settings.FilePolicy(ctx, o.SettingsFile)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the settings: %w", err)
		}
		return p, record.Warnings(), nil
	}
	if o.RewriteTriggers {
		out, err := params.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{Path: aws.String(o.ConfigPath), Recursive: aws.Bool(true), MaxResults: aws.Int32(1)})
		if err != nil {
			return nil, nil, fmt.Errorf("reading the settings under %s: %w", o.ConfigPath, err)
		}
		if len(out.Parameters) == 0 {
			return nil, nil, fmt.Errorf("no parameter under %s: is the path right? A rewrite is not judged by the built-in settings", o.ConfigPath)
		}
	}
	p, err := settings.New(params, o.ConfigPath, settings.DefaultTTL).Policy(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the settings under %s: %w", o.ConfigPath, err)
	}
	return p, record.Warnings(), nil
}

// WriteText writes the report as a table for people.
func (r *Report) WriteText(w io.Writer, table string) error {
	var b strings.Builder
	head := func(title string) { fmt.Fprintf(&b, "%s\n", title) }
	line := func(label string, n int) { fmt.Fprintf(&b, "  %-50s %8d\n", label, n) }
	s, l, t, e := r.Sessions, r.Ledger, r.Triggers, r.Environments
	fallbacks := func(f Fallbacks) {
		line("fall back: allocation retired", f.Retired)
		line("fall back: provider retired", f.ProviderRetired)
		line("fall back: unknown allocation", f.Unknown)
		line("fall back: not selectable", f.NotSelectable)
	}
	fmt.Fprintf(&b, "%s: %d items scanned\n\n", table, r.Scanned)
	head("Sessions")
	line("current (as the current writer writes them)", s.Current)
	line("legacy flat (version 1)", s.LegacyFlat)
	line("shared kind", s.SharedKind)
	line("shared route key id (org-, usr-, bot-, ubt-)", s.RouteKey)
	line("raw owner key id (__)", s.RawOwnerKey)
	line("legacy isolated id (ses-, istd-, crv-, dind-)", s.LegacyIsolatedPrefix)
	line("sbx- id with no kind", s.SbxNoKind)
	line("invalid (session_record_invalid)", s.Invalid)
	line("on a retired provider", s.OnRetiredProvider)
	line("on a retired allocation", s.OnRetiredAllocation)
	head("Operation ledger rows (expired ones included)")
	line("completed", l.Completed)
	line("in progress", l.InProgress)
	line("failed", l.Failed)
	line("record a shared sandbox", l.RecordsShared)
	line("refused as retired (ledger rules 2 and 3)", l.RecordsRetired)
	head("Triggers")
	line("total", t.Total)
	line("paused", t.Paused)
	line("webhook", t.Webhook)
	fallbacks(t.Fallback)
	head("Environments")
	line("total", e.Total)
	fallbacks(e.Fallback)
	if u := r.Uncounted; u != (Uncounted{}) {
		head("Not in the counts above")
		line("ledger rows that do not decode", u.Ledger)
		line("triggers that do not decode (in the total)", u.Triggers)
		line("environments that do not decode (in the total)", u.Environments)
		line("other items (counts, runs, default pointers)", u.Other)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// savedValue is a saved allocation as a body would send it again: the
// name, or the request object as JSON.
func savedValue(fb Fallback) string {
	name, req := fb.Saved()
	if req != nil {
		b, _ := json.Marshal(req)
		return string(b)
	}
	return strconv.Quote(name)
}

// writeRewrite writes one line per trigger or environment the rewrite met
// and a summary; the error says to run again when one could not be
// settled.
func writeRewrite(w io.Writer, outcomes []Outcome, dryRun bool) error {
	verb := "cleared"
	if dryRun {
		verb = "would clear"
	}
	counts := map[string]int{}
	var failed error
	for _, o := range outcomes {
		counts[o.Result]++
		what := o.Result
		switch o.Result {
		case Cleared:
			what = verb
		case Gone:
			what = "deleted since the scan"
		case Kept:
			what = "no longer falls back"
		case Changing, Failed:
			what = "kept changing; not cleared"
			if o.Result == Failed {
				what = "not cleared"
			}
			failed = errors.New("some triggers or environments were not settled: run the rewrite again")
		}
		fmt.Fprintf(w, "%s %s %s: %s, saved %s (%s)", o.Kind(), o.ID(), what, o.Class, savedValue(o.Fallback), o.Reason)
		if o.Err != nil {
			fmt.Fprintf(w, ": %v", o.Err)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "rewrite: %d %s, %d deleted since the scan, %d no longer fall back, %d not settled\n",
		counts[Cleared], verb, counts[Gone], counts[Kept], counts[Changing]+counts[Failed])
	return failed
}
