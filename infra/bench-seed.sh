#!/usr/bin/env bash
# make bench-seed: seeds a fixed job — EPSG:900913 z0–6 of the world, 5,461
# tiles in 4×4 metatiles, PNG — from the project's test WMS (MapServer,
# infra/wms) into MinIO (the local AWS stack, infra/devstack), and prints
# tiles/s, the CPU seconds of the seeder, of the WMS processes and of MinIO,
# the peak RSS, and the upstream-alone rate measured in the same run.
#
# Settings (environment):
#   RUNS=3          repetitions; medians are printed
#   THREADS=4       threadCount of the seed request (lanes)
#   UPSTREAM=4      GetMaps in flight at most (the layer's maxConcurrent)
#   ZOOM=6          last level
#   TILECACHE_BENCH_WMS_URL, TILECACHE_BENCH_WMS_PID
#                   seed from another WMS (e.g. one shared with other tile
#                   caches for a side-by-side run) and count the CPU of
#                   that process tree; the project's WMS is not started
# Everything it starts listens on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

. infra/bench-env.sh

GO="${GO:-go}"
bin="$TILECACHE_DEVSTACK_DIR/seedbench"
mkdir -p "$TILECACHE_DEVSTACK_DIR"
"$GO" build -o "$bin" ./internal/bench/seedbench

stop() {
  [[ -n "${TILECACHE_BENCH_WMS_URL:-}" ]] || bash infra/wms/down.sh >&2 || true
  bash infra/devstack/down.sh >&2 || true
}
trap stop EXIT
eval "$(bash infra/devstack/up.sh)"
if [[ -n "${TILECACHE_BENCH_WMS_URL:-}" ]]; then
  wms_url="$TILECACHE_BENCH_WMS_URL"
  wms_pid="${TILECACHE_BENCH_WMS_PID:-0}"
else
  eval "$(bash infra/wms/up.sh)"
  wms_url="$TILECACHE_WMS_URL"
  wms_pid="$(cat "$TILECACHE_WMS_DIR/lighttpd.pid")"
fi
minio_pid="$(cat "$TILECACHE_DEVSTACK_DIR/minio.pid")"

echo "bench-seed: WMS $wms_url (pid $wms_pid), MinIO $AWS_ENDPOINT_URL_S3 (pid $minio_pid), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$bin" -backend aws -wms "$wms_url" -zoom "${ZOOM:-6}" -runs "${RUNS:-3}" -threads "${THREADS:-4}" \
  -upstream "${UPSTREAM:-4}" -wms-pid "$wms_pid" -store-pid "$minio_pid"
