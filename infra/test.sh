#!/usr/bin/env bash
# The test command behind `make test`: brings up a local AWS stack and a test
# WMS (MapServer behind lighttpd, infra/wms) of its own (installing what is
# missing, cached), runs every test — the port conformance suites against the
# embedded and the AWS adapters, and the end-to-end HTTP tests once per
# backend — and stops what it started. A stack or WMS that cannot start fails
# the run: tests never skip silently here. At its end (also when a pass
# fails) it prints each pass's per-package times and slowest tests, read from
# the `go test -json` events it records in .devstack/test-results.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"

results="${TILECACHE_TEST_RESULTS_DIR:-$PWD/.devstack/test-results}"
mkdir -p "$results"
rm -f "$results/embedded.json" "$results/aws.json"
"$GO" build -o "$results/testtime" ./infra/testtime
# test_times: the summary of the passes that ran.
test_times() {
  local passes=()
  for p in embedded aws; do [[ -s "$results/$p.json" ]] && passes+=("$p=$results/$p.json"); done
  [[ ${#passes[@]} -eq 0 ]] || "$results/testtime" summary -n 15 "${passes[@]}" || true
}

# A stack of its own, on ports apart from the development stack's.
export TILECACHE_DEVSTACK_DIR="${TILECACHE_TEST_DEVSTACK_DIR:-$PWD/.devstack/test}"
export TILECACHE_S3_PORT="${TILECACHE_TEST_S3_PORT:-9350}"
export TILECACHE_S3_CONSOLE_PORT="${TILECACHE_TEST_S3_CONSOLE_PORT:-9351}"
export TILECACHE_DYNAMODB_PORT="${TILECACHE_TEST_DYNAMODB_PORT:-9352}"
export TILECACHE_SQS_PORT="${TILECACHE_TEST_SQS_PORT:-9353}"
export TILECACHE_WMS_PORT="${TILECACHE_TEST_WMS_PORT:-9354}"
export TILECACHE_CDN_PORT="${TILECACHE_TEST_CDN_PORT:-9355}"
export TILECACHE_WMS_DIR="${TILECACHE_TEST_WMS_DIR:-$PWD/.devstack/test-wms}"

trap 'test_times; bash infra/wms/down.sh >&2 || true; bash infra/devstack/down.sh >&2 || true' EXIT
if ! stack_env="$(bash infra/devstack/up.sh)"; then
  echo "make test: the local AWS stack did not start (see the messages above); failing" >&2
  exit 1
fi
eval "$stack_env"
if ! wms_env="$(bash infra/wms/up.sh)"; then
  echo "make test: the test WMS did not start (see the messages above); failing" >&2
  exit 1
fi
eval "$wms_env"
# Headless Chromium (demo page test) and GDAL (map-client test), once.
bash infra/browser/install.sh || { echo "make test: Chromium, GDAL, tmux, OWSLib or OpenLayers could not be installed; failing" >&2; exit 1; }
export TILECACHE_REQUIRE_DEVSTACK=1

"${MAKE:-make}" -s --no-print-directory lint-template GO="$GO"
echo "== every package (embedded backend; adapters against the local AWS stack)" >&2
# -json for the times; the filter shows build errors, failed tests' whole
# output and each package's result line, as go test does without -v.
"$GO" test -json -race -count=1 -timeout 20m ./... | "$results/testtime" filter "$results/embedded.json"
echo "== end-to-end tests on the AWS backend" >&2
TILECACHE_TEST_BACKEND=aws "$GO" test -json -race -count=1 -timeout 20m ./internal/app/... ./internal/rest/... |
  "$results/testtime" filter "$results/aws.json"
