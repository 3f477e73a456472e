#!/usr/bin/env bash
# The test command behind `make test`: brings up a local AWS stack and a test
# WMS (MapServer behind lighttpd, infra/wms) of its own (installing what is
# missing, cached), runs every test — the port conformance suites against the
# embedded and the AWS adapters, and the end-to-end HTTP tests once per
# backend — and stops what it started. A stack or WMS that cannot start fails
# the run: tests never skip silently here.
set -euo pipefail
cd "$(dirname "$0")/.."

# A stack of its own, on ports apart from the development stack's.
export TILECACHE_DEVSTACK_DIR="${TILECACHE_TEST_DEVSTACK_DIR:-$PWD/.devstack/test}"
export TILECACHE_S3_PORT="${TILECACHE_TEST_S3_PORT:-9350}"
export TILECACHE_S3_CONSOLE_PORT="${TILECACHE_TEST_S3_CONSOLE_PORT:-9351}"
export TILECACHE_DYNAMODB_PORT="${TILECACHE_TEST_DYNAMODB_PORT:-9352}"
export TILECACHE_SQS_PORT="${TILECACHE_TEST_SQS_PORT:-9353}"
export TILECACHE_WMS_PORT="${TILECACHE_TEST_WMS_PORT:-9354}"
export TILECACHE_CDN_PORT="${TILECACHE_TEST_CDN_PORT:-9355}"
export TILECACHE_WMS_DIR="${TILECACHE_TEST_WMS_DIR:-$PWD/.devstack/test-wms}"

trap 'bash infra/wms/down.sh >&2 || true; bash infra/devstack/down.sh >&2 || true' EXIT
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

GO="${GO:-go}"
"${MAKE:-make}" -s --no-print-directory lint-template GO="$GO"
echo "== every package (embedded backend; adapters against the local AWS stack)" >&2
"$GO" test -race -count=1 -timeout 20m ./...
echo "== end-to-end tests on the AWS backend" >&2
TILECACHE_TEST_BACKEND=aws "$GO" test -race -count=1 -timeout 20m ./internal/app/... ./internal/rest/...
