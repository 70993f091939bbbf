# mvp — the README's two commands are `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/mvp
RAY_WORKERS ?= 2
RAY_GPUS_PER_WORKER ?= 4
export RAY_WORKERS RAY_GPUS_PER_WORKER

.PHONY: all build ray-up ray-down run test test-unit test-e2e vet fuzz fuzz-all bench sim stress clean

all: build

build: ## build bin/mvp
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/mvp  # records the commit (mvp version) even where GOFLAGS says -buildvcs=false

ray-up: ## start (or find) the local Ray cluster in $$MVP_CLUSTER_DIR (default /tmp/mvp-ray-local)
	@bash scripts/ray-up.sh

ray-down: ## stop that cluster, by process group
	@bash scripts/ray-down.sh

run: ray-up build ## local Ray cluster + mvp serve in the foreground (Ctrl-C stops it)
	@bash scripts/run-local.sh

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...

test-unit: vet ## unit tests (no Ray needed), under the race detector
	@bash scripts/ensure-tools.sh
	$(GO) test -race -count=1 ./...

test-e2e: build ## end-to-end tests against a Ray cluster of their own (free ports, temp folder)
	@bash scripts/ensure-tools.sh
	@bash scripts/e2e.sh

test: test-unit test-e2e ## everything CI runs

fuzz: ## the jobspec parser's fuzz target (FUZZTIME=60s by default)
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$${FUZZTIME:-60s} ./internal/jobspec/

# Every fuzz target of a parser of input from users, clients, files or Ray, as package:target. `go test ./...`
# replays their seeds and testdata/fuzz corpus files; fuzz-all fuzzes them.
FUZZ_TARGETS := ./internal/jobspec:FuzzParse ./internal/jobspec:FuzzSetPath ./internal/config:FuzzParse \
	./internal/mvp:FuzzParseProgress ./internal/mvp:FuzzJSONEscapes ./internal/recurring:FuzzParse ./internal/recurring:FuzzParseStandard \
	./internal/sim:FuzzReadCSV ./internal/raycompat:FuzzSubmit ./internal/raycompat:FuzzPackageFile ./internal/ray:FuzzAnswers ./internal/api:FuzzReadQuery ./internal/api:FuzzWriteBody ./internal/scheduler:FuzzClassify \
	./internal/taskfs:FuzzCheckResultPath ./internal/taskfs:FuzzListResults ./internal/secrets:FuzzKeyFromEnv ./internal/secrets:FuzzPut

fuzz-all: ## every parser's fuzz target, one after another, FUZZTIME each (30s by default); stops at the first failure
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz: $${t##*:} in $${t%%:*} for $${FUZZTIME:-30s}"; \
		$(GO) test -run='^$$' -fuzz="^$${t##*:}\$$" -fuzztime=$${FUZZTIME:-30s} -fuzzminimizetime=$${FUZZMINIMIZETIME:-200x} $${t%%:*}; \
	done

bench: build ## benchmarks; figures go to BENCHMARKS.md
	@bash scripts/bench.sh

sim: ## replay generated traces through every scheduling policy (mvp sim) → the make sim section of BENCHMARKS.md
	@bash scripts/sim.sh

clean:
	rm -rf bin

stress: build ## long reliability runs (crash matrix ×20, 500-client load, 10 min fuzz) → RELIABILITY.md
	@bash scripts/stress.sh
