# The control plane's commands. Everything runs with only Go installed:
# tools are pinned as `tool` lines in go.mod.

GO       ?= go
FUZZTIME ?= 30s

.PHONY: test fmt-check vet staticcheck unit bench fuzz run

## test: gofmt check, go vet, staticcheck and every test (fuzz seed corpora included)
test: fmt-check vet staticcheck unit

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

unit:
	$(GO) test -count=1 ./...

## bench: every benchmark, with allocations
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: each fuzz target for FUZZTIME
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./shared/allocation
	$(GO) test -run '^$$' -fuzz '^FuzzClassify$$' -fuzztime $(FUZZTIME) ./shared/allocation
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./shared/session
	$(GO) test -run '^$$' -fuzz '^FuzzCheckUnique$$' -fuzztime $(FUZZTIME) ./shared/strictjson

## run: the local stack (see README)
run:
	$(GO) run ./infra/local/cmd/run
