# tilecache — see README.md. `make run` serves the demo locally; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
DATA  ?= .data
ADDR  ?= 127.0.0.1:8080
# networks every layer's upstream may be at, loopback and private ones included (development only)
UPSTREAM_ALLOW ?= 127.0.0.0/8,::1/128

.PHONY: run build tilecache test vet bench bench-quick bench-grid bench-seed bench-vector bench-peers bench-miss bench-scale devstack devstack-stop wms wms-stop web fuzz clean

## build: bin/tilecache for this machine, and the Lambda bootstraps bin/lambda/{api,worker,cleaner,tile,logs}/bootstrap (linux/arm64)
build: tilecache
	@for f in api worker cleaner tile logs; do \
	  echo "bin/lambda/$$f/bootstrap (linux/arm64)"; \
	  GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o bin/lambda/$$f/bootstrap ./functions/$$f || exit 1; done

## build-<Function>: what `sam build` runs for each function (template.yaml, BuildMethod makefile);
## LAYERS=path/to/layers.yaml ships a layer file as /var/task/layers.yaml (set LayersFile to use it)
LAMBDA_FLAGS := -trimpath -ldflags "-s -w" -tags lambda.norpc
LAYERS ?=
.PHONY: build-ApiFunction build-WorkerFunction build-CleanerFunction build-TileFunction build-LogsFunction lint-template
build-ApiFunction:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/api
	$(if $(LAYERS),cp $(LAYERS) $(ARTIFACTS_DIR)/layers.yaml)
build-WorkerFunction:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/worker
	$(if $(LAYERS),cp $(LAYERS) $(ARTIFACTS_DIR)/layers.yaml)
build-CleanerFunction:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/cleaner
	$(if $(LAYERS),cp $(LAYERS) $(ARTIFACTS_DIR)/layers.yaml)
build-TileFunction:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/tile
	$(if $(LAYERS),cp $(LAYERS) $(ARTIFACTS_DIR)/layers.yaml)
build-LogsFunction:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/logs
	$(if $(LAYERS),cp $(LAYERS) $(ARTIFACTS_DIR)/layers.yaml)

## lint-template: cfn-lint template.yaml (when installed; says so on stderr when not), then the Go template checks
lint-template:
	@if command -v cfn-lint >/dev/null 2>&1; then \
	  echo "cfn-lint template.yaml" >&2; cfn-lint template.yaml; \
	else \
	  echo "lint-template: WARNING: cfn-lint is not installed: template.yaml was NOT linted by cfn-lint, only by the Go checks" >&2; fi
	$(GO) test -count=1 -run '^TestTemplate' ./functions/

## tilecache: the local program only
tilecache:
	$(GO) build -o bin/tilecache ./cmd/tilecache

## run: serve the demo layer on $(ADDR) with the embedded backends under $(DATA)/
run: tilecache
	@mkdir -p $(DATA)
	@if [ ! -s $(DATA)/users ]; then \
	  ./bin/tilecache useradd -file $(DATA)/users -name admin -random > $(DATA)/admin-password; \
	  chmod 600 $(DATA)/admin-password; fi
	@echo "tilecache: http://$(ADDR)/rest  (data in $(DATA)/; demo map page: http://$(ADDR)/ once a layer is seeded)"
	@if [ -s $(DATA)/admin-password ]; then \
	  echo "account:   admin / $$(cat $(DATA)/admin-password)   (development account, stored in $(DATA)/users)"; \
	  echo "try:       curl -u admin:$$(cat $(DATA)/admin-password) -H 'Content-Type: application/json' \\"; \
	  echo "             -d '{\"seedRequest\":{\"zoomStart\":0,\"zoomStop\":4,\"threadCount\":2}}' http://$(ADDR)/rest/seed/demo:world.json"; \
	  echo "           curl -u admin:$$(cat $(DATA)/admin-password) http://$(ADDR)/rest/seed.json"; fi
	TILECACHE_ADDR=$(ADDR) TILECACHE_DATA=$(DATA) TILECACHE_UPSTREAM_ALLOW=$(UPSTREAM_ALLOW) ./bin/tilecache serve

## test: vet, then every test with the race detector, on both backends (starts and stops a local AWS stack and a test WMS)
test: export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
test: vet
	@GO=$(GO) bash infra/test.sh

## devstack: install (cached) and start MinIO, DynamoDB Local, fauxqs and moto_server (CloudFront) on loopback; use as eval "$$(make -s devstack)"
devstack:
	@bash infra/devstack/up.sh

## devstack-stop: stop what devstack started
devstack-stop:
	@bash infra/devstack/down.sh

## wms: install (cached) and start the test WMS (MapServer 8 behind lighttpd) on loopback; use as eval "$$(make -s wms)"
wms:
	@bash infra/wms/up.sh

## wms-stop: stop what wms started
wms-stop:
	@bash infra/wms/down.sh

## fuzz: every fuzz target for FUZZTIME each (default 10s); FUZZ=regexp picks targets; FUZZ_SAVE=N copies N new inputs per target into its committed corpus
fuzz:
	@GO=$(GO) bash infra/fuzz.sh

## web: rebuild internal/web/index.html (the demo map page, Leaflet inlined) and internal/console/dist (the console, OpenLayers bundled by esbuild) from web/ after installing its npm packages
web:
	cd web && npm install --no-package-lock --no-audit --no-fund && node build.mjs

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

## bench: every figure of the seeding path as a ratio against its reference measured in the same run (infra/bench.sh: store, seed, truncate, reseed, status, requests per 1,000 tiles; RUNS=3)
bench:
	@GO=$(GO) bash infra/bench.sh

## bench-quick: a fixed test-pattern seed on the embedded backend (tiles/s, peak RSS), then the tile-math benchmarks
bench-quick: bench-grid
	$(GO) run ./internal/bench/seedbench

## bench-seed: seed EPSG:900913 z0-6 (5,461 tiles, 4x4 metatiles, PNG) from the test WMS into MinIO; prints tiles/s, CPU s of seeder / WMS / MinIO, peak RSS and the upstream-alone rate
bench-seed:
	@GO=$(GO) bash infra/bench-seed.sh

## bench-vector: seed z0-8 of the test WMS's vector layers as PNG and as Mapbox Vector Tiles, alternating, into MinIO; medians of tiles/s, seeder CPU a tile and bytes stored (RUNS, ZOOM)
bench-vector:
	@GO=$(GO) bash infra/bench-vector.sh

## bench-peers: the bench-seed job side by side with MapCache (and MapProxy: PEERS="mapcache mapproxy") from one WMS into one MinIO; PEERS_DIR is the peers kit (default ../shared/peers)
bench-peers:
	@GO=$(GO) bash infra/bench-peers.sh

## bench-miss: render on miss from the test WMS (miss latency vs the WMS's own GetMap latency) and tile hits (/tiles vs http.FileServer on the same files), side by side
bench-miss:
	@GO=$(GO) bash infra/bench-miss.sh

## bench-layers: a stored configuration of LAYERS_N layers (default 5000): cold starts of the API and tile programs (time, CPU, heap, RSS) and refreshes; BACKEND=aws on the devstack
.PHONY: bench-layers
LAYERS_N ?= 5000
bench-layers:
	$(GO) run ./internal/bench/layerbench -layers $(LAYERS_N) -backend $(or $(BACKEND),embedded)

## bench-probes: the hostile-upstream probes (an MVT upstream answering 16 MB tiles of 1.19 M layers, its GeoJSON twin; render on miss and a seed) against bin/tilecache, and BEFORE=path/to/another/tilecache beside it: answer, time, peak RSS, TileJSON written
.PHONY: bench-probes
bench-probes: tilecache
	$(GO) run ./internal/bench/probebench -bin bin/tilecache $(if $(BEFORE),-bin $(BEFORE))

## bench-scale: the quota clean-up at 10k, 100k and 1M tile pages in DynamoDB Local (time, items read, peak RSS; JSON and SVG under .devstack/bench-scale)
bench-scale:
	@GO=$(GO) bash infra/bench-scale.sh

bench-grid:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/grid ./internal/tilestore/...

clean:
	rm -rf bin

## bench-fanout: seeding with 1, 2, 4, 8, 16 worker processes on the lane queue from the test WMS behind a 300 ms delay (tiles/s, scaling efficiency, peak GetMaps vs the upstream cap, DynamoDB writes per 1,000 tiles; JSON and SVG under .devstack/bench-fanout); SEED=N: N test-pattern tiles through SQS with 4 workers, checked DONE, stored and counted exactly
.PHONY: bench-fanout
bench-fanout:
	@GO=$(GO) bash infra/bench-fanout.sh

## bench-functions: each Lambda bootstrap as deployed: packages linked, binary size, and RUNS (default 5) cold starts under the Lambda Runtime Interface Emulator on the local stack (init, first response, peak RSS; min/median/max); starts the stack on the bench ports unless AWS_ENDPOINT_URL_DYNAMODB is set; REVS="7710197 ." measures git revisions and the working tree (.) side by side, runs interleaved; FUNCTIONS=api,tile picks some; OUT=file also writes the tables
.PHONY: bench-functions code-figures
bench-functions:
	@set -euo pipefail; \
	if [[ -z "$${AWS_ENDPOINT_URL_DYNAMODB:-}" ]]; then \
	  . infra/bench-env.sh; trap 'bash infra/devstack/down.sh >&2 || true' EXIT; eval "$$(bash infra/devstack/up.sh)"; fi; \
	$(GO) run ./internal/bench/coldstart -runs $(or $(RUNS),5) -revs "$(or $(REVS),.)" $(if $(FUNCTIONS),-functions $(FUNCTIONS)) $(if $(OUT),-o $(OUT))

## code-figures: methods of the largest types, references that run back up inside rest, layer, state/dynamo and seed, README lines and docs/, sleeps and long functions in tests (REV=commit measures that revision instead of the working tree; OUT=file also writes them)
code-figures:
	@$(GO) run ./internal/bench/codefigures $(if $(REV),-rev $(REV)) $(if $(OUT),-o $(OUT))
