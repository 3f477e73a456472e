# tilecache — see README.md. `make run` serves the demo locally; `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
DATA  ?= .data
ADDR  ?= 127.0.0.1:8080

.PHONY: run build test vet bench bench-grid devstack devstack-stop clean

build:
	$(GO) build -o bin/tilecache ./cmd/tilecache

## run: serve the demo layer on $(ADDR) with the embedded backends under $(DATA)/
run: build
	@mkdir -p $(DATA)
	@if [ ! -s $(DATA)/users ]; then \
	  ./bin/tilecache useradd -file $(DATA)/users -name admin -random > $(DATA)/admin-password; \
	  chmod 600 $(DATA)/admin-password; fi
	@echo "tilecache: http://$(ADDR)/rest  (data in $(DATA)/)"
	@if [ -s $(DATA)/admin-password ]; then \
	  echo "account:   admin / $$(cat $(DATA)/admin-password)   (development account, stored in $(DATA)/users)"; \
	  echo "try:       curl -u admin:$$(cat $(DATA)/admin-password) -H 'Content-Type: application/json' \\"; \
	  echo "             -d '{\"seedRequest\":{\"zoomStart\":0,\"zoomStop\":4,\"threadCount\":2}}' http://$(ADDR)/rest/seed/demo:world.json"; \
	  echo "           curl -u admin:$$(cat $(DATA)/admin-password) http://$(ADDR)/rest/seed.json"; fi
	TILECACHE_ADDR=$(ADDR) TILECACHE_DATA=$(DATA) ./bin/tilecache serve

## test: vet, then every test with the race detector, on both backends (starts and stops a local AWS stack)
test: vet
	@GO=$(GO) bash infra/test.sh

## devstack: install (cached) and start MinIO, DynamoDB Local and fauxqs on loopback; use as eval "$$(make -s devstack)"
devstack:
	@bash infra/devstack/up.sh

## devstack-stop: stop what devstack started
devstack-stop:
	@bash infra/devstack/down.sh

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

## bench: seed a fixed test-pattern job and print tiles/s and peak RSS; then the tile-math benchmarks
bench: bench-grid
	$(GO) run ./internal/bench/seedbench

bench-grid:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/grid ./internal/tilestore/...

clean:
	rm -rf bin
