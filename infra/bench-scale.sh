#!/usr/bin/env bash
# make bench-scale: how the disk-quota clean-up scales with the tile pages
# in the DynamoDB usage store (internal/bench/scalebench): for each size, a
# fresh table loaded with that many synthetic pages, then one clean-up
# freeing 1 % of the bytes; prints time, items read, pages deleted and
# peak RSS, and writes them as JSON (and SVG plots) under OUT.
#
# Settings (environment):
#   SIZES=10000,100000,1000000   page counts (a size whose load would take
#                                over MAX_LOAD, judged by the previous one's, is skipped)
#   MAX_LOAD=3m
#   OPS_MAX=0                    measure report, recount and removal only up to
#                                this many pages (0: at every size)
#   POLICY=LRU                   or LFU
#   LABEL=run                    name of the run (scale-$LABEL.json)
#   COMPARE=path.json            an earlier run to plot beside this one
#   OUT=.devstack/bench-scale    output directory
#   STATUS=10000,8,128           then the task status: List (GET /rest/seed.json)
#                                with FINISHED tasks kept and LAYERS x LANES running
#                                (empty: skipped)
#   AWS_ENDPOINT_URL_DYNAMODB    use this DynamoDB (Local) instead of
#                                starting one (the devstack, bench ports)
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
OUT="${OUT:-$PWD/.devstack/bench-scale}"
mkdir -p "$OUT"
bin="$OUT/scalebench"
"$GO" build -o "$bin" ./internal/bench/scalebench

if [[ -z "${AWS_ENDPOINT_URL_DYNAMODB:-}" ]]; then
  . infra/bench-env.sh
  # a million pages and their index entries, in memory
  export TILECACHE_DYNAMODB_HEAP="${TILECACHE_DYNAMODB_HEAP:-3g}"
  trap 'bash infra/devstack/down.sh >&2 || true' EXIT
  eval "$(bash infra/devstack/up.sh)"
fi
echo "bench-scale: DynamoDB $AWS_ENDPOINT_URL_DYNAMODB, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$bin" -sizes "${SIZES:-10000,100000,1000000}" -max-load "${MAX_LOAD:-3m}" -policy "${POLICY:-LRU}" -ops-max "${OPS_MAX:-0}" \
  -label "${LABEL:-run}" -out "$OUT" ${COMPARE:+-compare "$COMPARE"}
if [[ -n "${STATUS-10000,8,128}" ]]; then
  "$bin" -status "${STATUS-10000,8,128}"
fi
