#!/usr/bin/env bash
# make bench-miss: render on miss and tile hits of the local program
# (embedded backend) from the project's test WMS (MapServer, infra/wms):
# miss latency against the WMS's own GetMap latency for the same metatile,
# and hit latency and requests/s of /tiles against http.FileServer on the
# same files, measured side by side in one run (internal/bench/missbench).
#
# Settings (environment): MISSES=60, RUNS=3, CONCURRENCY=4, FOR=3s;
# TILECACHE_BENCH_WMS_URL to use another WMS (not started then).
# Everything it starts listens on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

. infra/bench-env.sh
GO="${GO:-go}"
bin="$PWD/.devstack/missbench"
mkdir -p "$PWD/.devstack"
"$GO" build -o "$bin" ./internal/bench/missbench

if [[ -n "${TILECACHE_BENCH_WMS_URL:-}" ]]; then
  wms_url="$TILECACHE_BENCH_WMS_URL"
else
  trap 'bash infra/wms/down.sh >&2 || true' EXIT
  eval "$(bash infra/wms/up.sh)"
  wms_url="$TILECACHE_WMS_URL"
fi
echo "bench-miss: WMS $wms_url, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$bin" -wms "$wms_url" -misses "${MISSES:-60}" -runs "${RUNS:-3}" -concurrency "${CONCURRENCY:-4}" -for "${FOR:-3s}"
