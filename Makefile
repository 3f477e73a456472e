# tilecache — see README.md. `make` alone lists the targets (`make help`); `make run` serves the demo locally; `make test` runs every test.
# Every target has one `## name: what it does` line above its rule and sits under a `##@ group` line: `make help` prints them.
SHELL := /bin/bash
GO    ?= go
DATA  ?= .data
ADDR  ?= 127.0.0.1:8080
# networks every layer's upstream may be at, loopback and private ones included (development only)
UPSTREAM_ALLOW ?= 127.0.0.0/8,::1/128

.DEFAULT_GOAL := help

# The recipes several targets share.
# infra_script: the target's script infra/<target>.sh, with the Go command to use.
infra_script = @GO=$(GO) bash infra/$@.sh
# stack_up, stack_down: start or stop the local service the target names (infra/<service>/up.sh, down.sh; <service>-stop stops).
stack_up   = @bash infra/$@/up.sh
stack_down = @bash infra/$(@:-stop=)/down.sh
# lambda_build: build ./functions/$(1) as the Lambda bootstrap $(2)/bootstrap (linux/arm64, as template.yaml deploys it).
LAMBDA_FLAGS := -trimpath -ldflags "-s -w" -tags lambda.norpc
lambda_build = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(2)/bootstrap ./functions/$(1)
# The Lambda functions of template.yaml (<Name>Function), each built from ./functions/<name>.
LAMBDA_FUNCTIONS := Api Worker Cleaner Tile Logs
lower = $(shell tr '[:upper:]' '[:lower:]' <<< '$(1)')

##@ run
.PHONY: run tilecache

## run: serve the demo layer on ADDR (127.0.0.1:8080) with the embedded backends under DATA (.data/), creating a development account at first
run: tilecache
	@mkdir -p $(DATA)
	@if [ ! -s $(DATA)/users ]; then \
	  ./bin/tilecache useradd -file $(DATA)/users -name admin -random > $(DATA)/admin-password; \
	  chmod 600 $(DATA)/admin-password; fi
	@echo "console:   http://$(ADDR)/console/  (sign in with the account below)"
	@echo "tilecache: http://$(ADDR)/rest  (data in $(DATA)/; demo map page: http://$(ADDR)/ once a layer is seeded)"
	@if [ -s $(DATA)/admin-password ]; then \
	  echo "account:   admin / $$(cat $(DATA)/admin-password)   (development account, stored in $(DATA)/users)"; \
	  echo "try:       curl -u admin:$$(cat $(DATA)/admin-password) -H 'Content-Type: application/json' \\"; \
	  echo "             -d '{\"seedRequest\":{\"zoomStart\":0,\"zoomStop\":4,\"threadCount\":2}}' http://$(ADDR)/rest/seed/demo:world.json"; \
	  echo "           curl -u admin:$$(cat $(DATA)/admin-password) http://$(ADDR)/rest/seed.json"; fi
	TILECACHE_ADDR=$(ADDR) TILECACHE_DATA=$(DATA) TILECACHE_UPSTREAM_ALLOW=$(UPSTREAM_ALLOW) ./bin/tilecache serve

## tilecache: build the local program only, bin/tilecache
tilecache:
	$(GO) build -o bin/tilecache ./cmd/tilecache

##@ test
.PHONY: test checks test-edge vet staticcheck lint-web test-web lint-template fuzz

## test: every test with the race detector on both backends (starts and stops a local AWS stack and a test WMS), with make checks beside it; what CI runs
test: export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
test:
	@GO=$(GO) bash infra/test.sh

## checks: the checks that need no stack: vet, staticcheck, lint-web, test-web and lint-template (make test runs them beside its first pass)
checks: vet staticcheck lint-web test-web lint-template

## test-edge: the CDN edge functions (functions/edge/*.js) under node and njs (installed with the browser tools by infra/browser/install.sh) against their Go twins, and their size
test-edge:
	@bash infra/browser/install.sh
	$(GO) test -count=1 -run '^(TestEdge|TestVectorsEdge|TestTemplateEdge)' ./internal/edgepath ./internal/tiletoken ./functions/

## vet: gofmt check of every Go file, then go vet
vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

## staticcheck: staticcheck over every package, tests included (the pinned version, installed once and cached); any finding fails
staticcheck:
	$(infra_script)

## lint-web: eslint over web/ and functions/edge, then the committed bundles (internal/web/index.html, internal/console/dist) compared with a rebuild of web/ (npm ci from web/package-lock.json first, skipped when installed)
lint-web:
	@bash infra/web-install.sh
	cd web && npm run -s lint && npm run -s check

## test-web: the console's unit tests (vitest, web/test) (npm ci from web/package-lock.json first, skipped when installed)
test-web:
	@bash infra/web-install.sh
	cd web && npm run -s test

## lint-template: cfn-lint template.yaml (when installed; says so on stderr when not), then the Go template checks
lint-template:
	@if command -v cfn-lint >/dev/null 2>&1; then \
	  echo "cfn-lint template.yaml" >&2; cfn-lint template.yaml; \
	else \
	  echo "lint-template: WARNING: cfn-lint is not installed: template.yaml was NOT linted by cfn-lint, only by the Go checks" >&2; fi
	$(GO) test -count=1 -run '^TestTemplate' ./functions/

## fuzz: every fuzz target for FUZZTIME each (default 10s); FUZZ=regexp picks targets; FUZZ_SAVE=N copies N new inputs per target into its corpus
fuzz:
	$(infra_script)

##@ bench
.PHONY: bench bench-quick bench-grid bench-seed bench-vector bench-peers bench-miss bench-layers bench-probes bench-scale bench-fanout bench-functions code-figures

## bench: every figure of the seeding path as a ratio against its reference measured in the same run (store, seed, truncate, reseed, status; RUNS=3)
bench:
	$(infra_script)

## bench-quick: the tile-math benchmarks (bench-grid), then a fixed test-pattern seed on the embedded backend (tiles/s, peak RSS)
bench-quick: bench-grid
	$(GO) run ./internal/bench/seedbench

## bench-grid: the Go benchmarks of the tile math and the tile stores
bench-grid:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/grid ./internal/tilestore/...

## bench-seed: seed EPSG:900913 z0-6 from the test WMS into MinIO: tiles/s, CPU s of seeder / WMS / MinIO, peak RSS, the upstream-alone rate
bench-seed:
	$(infra_script)

## bench-vector: seed z0-8 of the test WMS's vector layers as PNG and as Mapbox Vector Tiles into MinIO: tiles/s, CPU a tile, bytes (RUNS, ZOOM)
bench-vector:
	$(infra_script)

## bench-peers: the bench-seed job side by side with MapCache (PEERS="mapcache mapproxy" adds MapProxy); PEERS_DIR: the peers kit (../shared/peers)
bench-peers:
	$(infra_script)

## bench-miss: render on miss vs the test WMS's own GetMap latency, and tile hits (/tiles vs http.FileServer on the same files)
bench-miss:
	$(infra_script)

## bench-layers: LAYERS_N stored layers (default 5000): cold starts of the API and tile programs, and refreshes; BACKEND=aws on the devstack
LAYERS_N ?= 5000
bench-layers:
	$(GO) run ./internal/bench/layerbench -layers $(LAYERS_N) -backend $(or $(BACKEND),embedded)

## bench-probes: the hostile-upstream probes (16 MB MVT tiles, their GeoJSON twin) against bin/tilecache, and BEFORE=another/tilecache beside it
bench-probes: tilecache
	$(GO) run ./internal/bench/probebench -bin bin/tilecache $(if $(BEFORE),-bin $(BEFORE))

## bench-scale: the quota clean-up at 10k, 100k and 1M tile pages in DynamoDB Local (time, items read, peak RSS; under .devstack/bench-scale)
bench-scale:
	$(infra_script)

## bench-fanout: seeding with 1-16 worker processes on the lane queue behind a 300 ms WMS (tiles/s, efficiency); SEED=N tiles through SQS
bench-fanout:
	$(infra_script)

## bench-functions: each Lambda bootstrap as deployed: packages linked, binary size, and RUNS (default 5) cold starts under the Lambda Runtime Interface Emulator on the local stack (init, first response, peak RSS; min/median/max); starts the stack on the bench ports unless AWS_ENDPOINT_URL_DYNAMODB is set; REVS="7710197 ." measures git revisions and the working tree (.) side by side, runs interleaved; FUNCTIONS=api,tile picks some; OUT=file also writes the tables
bench-functions:
	@set -euo pipefail; \
	if [[ -z "$${AWS_ENDPOINT_URL_DYNAMODB:-}" ]]; then \
	  . infra/bench-env.sh; trap 'bash infra/devstack/down.sh >&2 || true' EXIT; eval "$$(bash infra/devstack/up.sh)"; fi; \
	$(GO) run ./internal/bench/coldstart -runs $(or $(RUNS),5) -revs "$(or $(REVS),.)" $(if $(FUNCTIONS),-functions $(FUNCTIONS)) $(if $(OUT),-o $(OUT))

## code-figures: methods of the largest types, references that run back up inside rest, layer, state/dynamo and seed, README lines and docs/, sleeps and long functions in tests (REV=commit measures that revision instead of the working tree; OUT=file also writes them)
code-figures:
	@$(GO) run ./internal/bench/codefigures $(if $(REV),-rev $(REV)) $(if $(OUT),-o $(OUT))

##@ stack
.PHONY: devstack devstack-stop wms wms-stop

## devstack: install (cached) and start MinIO, DynamoDB Local, fauxqs and moto_server (CloudFront) on loopback; use as eval "$(make -s devstack)"
devstack:
	$(stack_up)

## devstack-stop: stop what devstack started
devstack-stop:
	$(stack_down)

## wms: install (cached) and start the test WMS (MapServer 8 behind lighttpd) on loopback; use as eval "$(make -s wms)"
wms:
	$(stack_up)

## wms-stop: stop what wms started
wms-stop:
	$(stack_down)

##@ other
.PHONY: help build $(LAMBDA_FUNCTIONS:%=build-%Function) web clean

## help: this list (the default goal)
help:
	@awk '/^##@ / { printf "%s%s:\n", (groups++ ? "\n" : ""), substr($$0, 5) } \
	     /^## [^ :]+: / { name = substr($$2, 1, length($$2) - 1); sub(/^## [^ :]+: /, ""); printf "  %-18s %s\n", name, $$0 }' $(firstword $(MAKEFILE_LIST))

## build: bin/tilecache, and the Lambda bootstraps bin/lambda/{api,worker,cleaner,tile,logs}/bootstrap (linux/arm64)
build: tilecache
	@for f in $(call lower,$(LAMBDA_FUNCTIONS)); do \
	  echo "bin/lambda/$$f/bootstrap (linux/arm64)"; \
	  $(call lambda_build,$$f,bin/lambda/$$f) || exit 1; done

## build-<Function>: what `sam build` runs for each function of template.yaml (BuildMethod makefile): its bootstrap into ARTIFACTS_DIR
# LAYERS=path/to/layers.yaml ships a layer file as /var/task/layers.yaml (set LayersFile to use it).
LAYERS ?=
$(LAMBDA_FUNCTIONS:%=build-%Function): build-%Function:
	$(call lambda_build,$(call lower,$*),$(ARTIFACTS_DIR))
	$(if $(LAYERS),cp $(LAYERS) $(ARTIFACTS_DIR)/layers.yaml)

## web: rebuild internal/web/index.html (the demo map page) and internal/console/dist (the console) from web/ (npm ci from web/package-lock.json first, skipped when installed)
web:
	@bash infra/web-install.sh
	cd web && node build.mjs

## clean: remove bin/
clean:
	rm -rf bin
