#!/usr/bin/env bash
# make bench-fanout: how seeding scales with worker processes on the local
# AWS stack (internal/bench/fanoutbench). Each worker is a process running
# the program's worker path (app.NewWorker + Program.Run, one lane worker
# each) on the lane queue; the API program takes the request.
#
# Scaling (default): 1, 2, 4, 8 and 16 workers seeding from the test WMS
# (infra/wms) behind a proxy that holds every GetMap 300 ms and counts the
# GetMaps in flight at its side; the layer's maxConcurrent (the global
# upstream cap) is CAP. Prints tiles/s, scaling efficiency, the peak of
# GetMaps in flight, DynamoDB writes per 1,000 tiles and CPU per tile;
# writes JSON and an SVG plot under OUT.
#
# Seed (SEED=N): N test-pattern tiles (a multiple of 1,000) through SQS
# with SEED_WORKERS workers; checks DONE, every tile stored and the usage
# exact. MinIO keeps its data on disk under OUT for this (a million tiles
# would not sit well in /dev/shm), removed at the end.
#
# Settings (environment):
#   WORKERS=1,2,4,8,16  DELAY=300ms  CAP=8  WMS_LAYERS=polygons
#   ZOOM=8  ROWS_PER_WORKER=8 (tile rows of level ZOOM per worker: the job
#           grows with the workers, so every run lasts about as long)
#   RUNS=1  (passes over the worker counts, interleaved; medians)
#   SEED=   (a multiple of 4,000)  SEED_WORKERS=4  TIMEOUT=15m (longest wait for one run's seed)
#   LABEL=run  OUT=.devstack/bench-fanout
#   NICE=0  (niceness of the benchmark and its workers)
# It starts its own stack and WMS on ports apart from the other benches'
# (TILECACHE_BENCH_*_PORT override) and stops them at the end; everything
# listens on 127.0.0.1 (DynamoDB Local binds every interface).
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
OUT="${OUT:-$PWD/.devstack/bench-fanout}"
mkdir -p "$OUT"
export TILECACHE_BENCH_DEVSTACK_DIR="${TILECACHE_BENCH_DEVSTACK_DIR:-$PWD/.devstack/bench-fanout-stack}"
export TILECACHE_BENCH_S3_PORT="${TILECACHE_BENCH_S3_PORT:-9380}"
export TILECACHE_BENCH_S3_CONSOLE_PORT="${TILECACHE_BENCH_S3_CONSOLE_PORT:-9381}"
export TILECACHE_BENCH_DYNAMODB_PORT="${TILECACHE_BENCH_DYNAMODB_PORT:-9382}"
export TILECACHE_BENCH_SQS_PORT="${TILECACHE_BENCH_SQS_PORT:-9383}"
export TILECACHE_BENCH_WMS_PORT="${TILECACHE_BENCH_WMS_PORT:-9384}"
export TILECACHE_BENCH_CDN_PORT="${TILECACHE_BENCH_CDN_PORT:-9385}"
export TILECACHE_BENCH_WMS_DIR="${TILECACHE_BENCH_WMS_DIR:-$PWD/.devstack/bench-fanout-wms}"
. infra/bench-env.sh

bin="$OUT/fanoutbench"
"$GO" build -o "$bin" ./internal/bench/fanoutbench

minio_data=""
if [[ -n "${SEED:-}" && -z "${TILECACHE_MINIO_DATA:-}" ]]; then
  minio_data="$OUT/minio-data"
  rm -rf "$minio_data"
  export TILECACHE_MINIO_DATA="$minio_data"
fi
wms_started=""
stop() {
  [[ -z "$wms_started" ]] || bash infra/wms/down.sh >&2 || true
  bash infra/devstack/down.sh >&2 || true
  [[ -z "$minio_data" ]] || rm -rf "$minio_data"
}
trap stop EXIT
eval "$(bash infra/devstack/up.sh)"
pids=()
for s in minio dynamodb sqs; do
  [[ -f "$TILECACHE_DEVSTACK_DIR/$s.pid" ]] && pids+=("$(cat "$TILECACHE_DEVSTACK_DIR/$s.pid")")
done
stack_pids="$(IFS=,; echo "${pids[*]}")"

run=(nice -n "${NICE:-0}" "$bin" -stack-pids "$stack_pids" -timeout "${TIMEOUT:-15m}" -label "${LABEL:-run}" -out "$OUT")
if [[ -n "${SEED:-}" ]]; then
  echo "bench-fanout: seed of $SEED tiles, stack $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL_DYNAMODB / $AWS_ENDPOINT_URL_SQS, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "${run[@]}" -seed "$SEED" -seed-workers "${SEED_WORKERS:-4}"
else
  # enough mapserv processes that none of the GetMaps in flight queues at the WMS
  export TILECACHE_WMS_PROCS="${TILECACHE_WMS_PROCS:-16}"
  wms_started=1
  eval "$(bash infra/wms/up.sh)"
  wms_pid="$(cat "$TILECACHE_WMS_DIR/lighttpd.pid")"
  echo "bench-fanout: WMS $TILECACHE_WMS_URL (pid $wms_pid), stack $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL_DYNAMODB / $AWS_ENDPOINT_URL_SQS, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "${run[@]}" -wms "$TILECACHE_WMS_URL" -wms-pid "$wms_pid" -wms-layers "${WMS_LAYERS:-polygons}" -workers "${WORKERS:-1,2,4,8,16}" \
    -delay "${DELAY:-300ms}" -cap "${CAP:-8}" -zoom "${ZOOM:-8}" -rows-per-worker "${ROWS_PER_WORKER:-8}" -runs "${RUNS:-1}"
fi
