# The control plane's commands. Everything runs with only Go installed:
# tools are pinned as `tool` lines in go.mod.

GO       ?= go
FUZZTIME ?= 30s
# the embedded DynamoDB endpoint's requests, which every local test stands on
ENDPOINT_FUZZTIME ?= 60s
SHELL    := bash

# go.mod names the Go toolchain (1.27.3); machines whose Go ships
# GOTOOLCHAIN=local in its go.env would refuse it, so the go command is
# told to fetch it from the module proxy (once), as it does by default.
export GOTOOLCHAIN := auto

# Lambda builds: `sam build` runs build-<LogicalId> with ARTIFACTS_DIR set
# (BuildMethod: makefile). Each function's folder under functions/:
folder_SessionStartFunction     := sessionstart
folder_AllocationLookupFunction := allocationlookup
folder_TriggersFunction         := triggers
folder_TriggerFireFunction      := triggerfire
folder_TriggerHookFunction      := triggerhook
folder_EnvironmentsFunction     := environments
folder_SessionEventsFunction    := sessionevents
folder_RuntimeFunction          := runtime
# The template's functions run on arm64; tests build for the machine's own.
LAMBDA_GOARCH ?= arm64
ARTIFACTS_DIR ?= build/$*

.PHONY: test fmt-check vet staticcheck unit bench fuzz run audit replay-events

## build-<LogicalId>: the function's bootstrap in ARTIFACTS_DIR, as Lambda runs it
build-%:
	@test -n "$(folder_$*)" || { echo "no function $*"; exit 1; }
	CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w" \
		-o $(ARTIFACTS_DIR)/bootstrap ./functions/$(folder_$*)

## test: gofmt check, go vet, staticcheck and every test (fuzz seed corpora
## included), under the race detector: the firing fires triggers
## concurrently. .ci/test runs go vet first, then staticcheck beside the
## tests, all three on one compilation; it says which optional tools it
## found, each step's time as it ends and each test package's as it ends.
## The steps one by one: make fmt-check vet staticcheck unit.
test:
	@GO="$(GO)" .ci/test

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The checks build under the race detector, as the tests do, so that the
# three share one compilation of every package (.ci/test).
vet:
	$(GO) vet -race ./...

staticcheck:
	GOFLAGS="$$($(GO) env GOFLAGS) -race" $(GO) tool staticcheck ./...

unit:
	$(GO) test -count=1 -race -ldflags="-s -w" -p 3 ./...

## bench: every benchmark, with allocations, then the tables of
## docs/performance.md: every figure that has a goal or a floor, as a ratio
## to its floor beside its goal, and the times and allocations. The page
## with this run's tables goes to BENCH_PAGE (`make bench
## BENCH_PAGE=docs/performance.md` keeps it). The test binaries are built
## first, in parallel; then the benchmarks run one package at a time, so
## that none measures beside another. The bursts, the deliveries at once,
## the cold starts and the sizes are one measured run each. Kept as
## docs/performance.md, the run also rewrites docs/scaling.md's table of
## the model (infra/scaling), at the CPU per trigger it measured.
BENCH_PKGS := $(sort $(dir $(shell grep -rl --include='*_test.go' '^func Benchmark' .)))
ONCE       := BenchmarkBurst|BenchmarkStackBurst|BenchmarkDeliveries|BenchmarkColdStart|BenchmarkSize
BENCH_PAGE ?= build/performance.md
bench:
	@mkdir -p build
	$(GO) test -run '^$$' -bench '^$$' $(BENCH_PKGS) > /dev/null
	set -o pipefail; { \
		$(GO) test -p 1 -run '^$$' -bench . -skip '$(ONCE)' -benchtime 500ms -benchmem $(BENCH_PKGS) && \
		$(GO) test -p 1 -run '^$$' -bench '$(ONCE)' -benchtime 1x -benchmem $(BENCH_PKGS) ; \
	} | tee build/bench.txt
	$(GO) run ./infra/cmd/benchtable -page $(BENCH_PAGE) < build/bench.txt
	@if [ "$(BENCH_PAGE)" = docs/performance.md ]; then $(GO) test -count=1 -run '^TestScalingPage$$' ./infra/scaling -update; fi

## fuzz: each fuzz target for FUZZTIME, the endpoint's for ENDPOINT_FUZZTIME
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./shared/allocation
	$(GO) test -run '^$$' -fuzz '^FuzzClassify$$' -fuzztime $(FUZZTIME) ./shared/allocation
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSession$$' -fuzztime $(FUZZTIME) ./shared/store
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeItem$$' -fuzztime $(FUZZTIME) ./shared/store
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEnvironment$$' -fuzztime $(FUZZTIME) ./shared/store
	$(GO) test -run '^$$' -fuzz '^FuzzParseRequest$$' -fuzztime $(FUZZTIME) ./shared/start
	$(GO) test -run '^$$' -fuzz '^FuzzCallerFrom$$' -fuzztime $(FUZZTIME) ./shared/httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzParseSchedule$$' -fuzztime $(FUZZTIME) ./shared/trigger
	$(GO) test -run '^$$' -fuzz '^FuzzPatch$$' -fuzztime $(FUZZTIME) ./shared/triggerapi
	$(GO) test -run '^$$' -fuzz '^FuzzCursors$$' -fuzztime $(FUZZTIME) ./shared/triggerapi
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime $(FUZZTIME) ./shared/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzDeliveryOf$$' -fuzztime $(FUZZTIME) ./shared/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzTemplate$$' -fuzztime $(FUZZTIME) ./shared/webhook
	$(GO) test -run '^$$' -fuzz '^FuzzUnproven$$' -fuzztime $(FUZZTIME) ./shared/hook
	$(GO) test -run '^$$' -fuzz '^FuzzExpr$$' -fuzztime $(FUZZTIME) ./infra/local/dynamo
	$(GO) test -run '^$$' -fuzz '^FuzzAnswer$$' -fuzztime $(FUZZTIME) ./infra/local/kms
	$(GO) test -run '^$$' -fuzz '^FuzzEndpoint$$' -fuzztime $(ENDPOINT_FUZZTIME) ./infra/local/dynamo

## run: the local stack (see README); e.g. make run RUN_ARGS="-api-addr 127.0.0.1:3001 -data .local/table.jsonl"
## The build says, every 5 seconds, how many packages it has compiled and
## which it is at (go build -v names each).
run:
	@echo "Building bin/run, the local stack's command (on empty caches, the go command first fetches the modules go.mod pins, then compiles them: a minute or more)…"
	@SECONDS=0; set -o pipefail; $(GO) build -v -o bin/run ./infra/cmd/run 2>&1 | { \
		n=0; said=$$SECONDS; \
		while IFS= read -r line; do case "$$line" in \
			go:* | \#* | *.go:*) echo "$$line" ;; \
			*) n=$$((n + 1)); if [ $$((SECONDS - said)) -ge 5 ]; then echo "  $${SECONDS}s: $$n packages compiled, now $$line"; said=$$SECONDS; fi ;; \
		esac; done; \
		[ $$n -eq 0 ] || echo "  $$n packages compiled"; \
	} && echo "built bin/run in $${SECONDS}s"
	@exec bin/run $(RUN_ARGS)

## audit: what a table still holds from the shared-sandbox era; the report
## writes nothing, -rewrite-triggers clears the saved allocations that fall
## back (docs/operations.md). The local stack's table by default, e.g.
## make audit AUDIT_ARGS="-json" or AUDIT_ARGS="-table T -region R -config-path /cloud-agent/prod"
audit:
	@$(GO) run ./infra/cmd/audit $(AUDIT_ARGS)

## replay-events: the events of the stream batches SessionEventsFunction
## gave up on, put again from the stream within its 24 hours
## (docs/operations.md). The local stack's failure file by default, e.g.
## make replay-events REPLAY_ARGS="-kms-endpoint http://127.0.0.1:P -events-endpoint http://127.0.0.1:Q"
## or REPLAY_ARGS="-region R -function F -failures messages.json" in AWS
replay-events:
	@$(GO) run ./infra/cmd/replayevents $(REPLAY_ARGS)
