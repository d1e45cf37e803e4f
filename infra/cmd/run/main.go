// Command run starts the local stack behind `make run`: a DynamoDB endpoint
// with the table of template.yaml (or the one AWS_ENDPOINT_URL_DYNAMODB
// names), the settings stand-in, the KMS stand-in with its key file, the
// event bus stand-in (EventBridge's PutEvents), every function of the
// template under the Lambda runtime interface emulator, and a gateway
// that routes as the template's HttpApi events do. Everything listens on
// loopback only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cloud-agent/control-plane/infra/local"
	"github.com/cloud-agent/control-plane/infra/local/gateway"
	"github.com/cloud-agent/control-plane/infra/local/kms"
	"github.com/cloud-agent/control-plane/infra/template"
)

func main() {
	local.TuneGC()
	cfg := local.Config{Repo: ".", DynamoURL: os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), Logs: os.Stderr, Progress: os.Stdout}
	flag.StringVar(&cfg.DynamoAddr, "dynamo-addr", local.DynamoAddr, "address of the embedded DynamoDB endpoint")
	flag.StringVar(&cfg.APIAddr, "api-addr", "127.0.0.1:3000", "address of the HTTP API")
	flag.StringVar(&cfg.SettingsFile, "settings", ".local/settings.json", "the settings file (created from template.yaml's parameters when missing)")
	flag.StringVar(&cfg.KeysFile, "kms-keys", ".local/kms-keys.json", "the KMS stand-in's keys (created on the first run; keep it to keep the webhook secrets)")
	flag.StringVar(&cfg.EventsAddr, "events-addr", "127.0.0.1:0", "address of the event bus stand-in, which answers EventBridge's PutEvents (port 0: a free one)")
	flag.StringVar(&cfg.DataFile, "data", "", "keep the table in this file between runs (default: in memory only)")
	flag.BoolVar(&cfg.Verbose, "v", false, "show the Lambda runtime interface emulator's INFO lines too (each phase of an initialisation and of an invocation)")
	cfg.Parameters = map[string]string{}
	flag.Func("parameter", "a template.yaml parameter over its default, as Name=Value (repeatable); e.g. FiringSchedules=4 runs 4 firing schedules, each with its share of the shards", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not Name=Value", s)
		}
		cfg.Parameters[k] = v
		return nil
	})
	flag.Parse()
	if cfg.DynamoURL != "" {
		cfg.DynamoAddr = ""
	}
	if err := run(cfg); err != nil {
		log.Fatal(err)
	}
}

func run(cfg local.Config) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println("Starting the local stack: each function of template.yaml is built as sam build builds it, then run under the Lambda runtime interface emulator (on empty caches, the first build takes a minute or more).")
	s, err := local.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = errors.Join(err, s.Close(sctx)) // a failed save is a failed run
	}()
	where := "embedded, in memory"
	switch {
	case cfg.DynamoURL != "":
		where = "AWS_ENDPOINT_URL_DYNAMODB"
	case cfg.DataFile != "":
		where = "embedded, kept in " + cfg.DataFile
	}
	token := gateway.DevToken(map[string]any{"sub": "dev-user", "org_ids": []string{"dev-org"}})
	fmt.Printf(`
HTTP API:           %s
DynamoDB endpoint:  %s (%s), table %s
Settings:           %s (edit it; functions reread it every CONFIG_TTL_SECONDS)
kms: %s (keys %s in %s; Decrypt answered to anyone, as a local execution plane needs)
events: %s (PutEvents for bus %s; listed at %s/_local/events)
Stream:             %s, handed to %s (checkpoint %s, failures %s)
Functions:          %s

WARNING: local only. The gateway takes the claims from the bearer token's
payload WITHOUT checking its signature, expiry, issuer or audience.

A development token (sub dev-user, org dev-org):

  TOKEN=%s

  curl -s -X POST %s/v1/sessions -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"}}'
  curl -s %s/v1/allocations -H "Authorization: Bearer $TOKEN"
  curl -s -X POST %s/v1/triggers -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"schedule":{"cron":"*/5 * * * *"},"repository":{"type":"github","repo":"acme/app"},"agent":{"mode":"code","model":"anthropic/claude"},"prompt":"Triage new issues."}'

Run a function's schedule now (as of a time at most 5 minutes ahead, with -d):
  curl -s -X POST %s/_local/schedule/<LogicalId> [-d "{\"time\":\"$(date -u +%%Y-%%m-%%dT%%H:%%M:00Z)\"}"]
Making a trigger, starting it now and making it fire: README.md, "Trying a trigger locally".
Putting again the events of a batch in the local failure queue:
  make replay-events REPLAY_ARGS="-kms-endpoint %s -events-endpoint %s -failures %s"
Press Ctrl-C to stop.
`, s.APIURL, s.DynamoURL, where, template.TableLogicalID, cfg.SettingsFile, s.KMSURL, keyIDs(), keysWhere(cfg), s.EventsURL, s.Bus.Name(), s.APIURL, s.StreamARN, "SessionEventsFunction", s.StreamFiles()[0], s.StreamFiles()[1], functionIDs(s), token, s.APIURL, s.APIURL, s.APIURL, s.APIURL, s.KMSURL, s.EventsURL, s.StreamFiles()[1])
	<-ctx.Done()
	fmt.Println("Stopping.")
	return nil
}

func keyIDs() string {
	var ids []string
	for _, sp := range kms.Specs {
		ids = append(ids, sp.LogicalID+" ("+sp.Env+")")
	}
	return strings.Join(ids, ", ")
}

func keysWhere(cfg local.Config) string {
	if cfg.KeysFile == "" {
		return "memory only"
	}
	return cfg.KeysFile
}

func functionIDs(s *local.Stack) string {
	ids := make([]string, len(s.Functions))
	for i, fn := range s.Functions {
		ids[i] = fn.LogicalID
	}
	return strings.Join(ids, ", ")
}
