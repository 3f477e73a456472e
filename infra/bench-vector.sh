#!/usr/bin/env bash
# make bench-vector: seeds EPSG:900913 z0-${ZOOM:-8} of the test WMS's
# vector layers (LAYERS=polygons,lines,points) as PNG tiles (4×4
# metatiles, one 1024² GetMap each) and as Mapbox Vector Tiles (one MVT
# GetMap per tile) into MinIO, alternating the two formats run by run
# (side by side in one run of the script), and prints per run and as
# medians: tiles/s, the seeder's CPU seconds and milliseconds a tile, the
# WMS's and MinIO's CPU seconds, and the bytes stored.
#
# Settings (environment): RUNS=3, ZOOM=8, THREADS=4, UPSTREAM=4, BBOX
# (the seed's bounds, minx,miny,maxx,maxy in EPSG:900913 metres; default
# the whole world: z0-8 is 87,381 tiles, about 40 minutes a format here;
# BBOX=0,0,10018754.171394622,10018754.171394622, a sixteenth of the
# world, makes z0-8 5,461 tiles, 4,096 of them at z8); and, as
# for bench-seed.sh, TILECACHE_BENCH_WMS_URL / TILECACHE_BENCH_WMS_PID to
# seed from a WMS already running; PROFILE=dir writes a CPU profile of each
# seed there (go tool pprof -tags: the seed's stages). The local AWS stack and the WMS it
# starts are stopped at the end (bench-env.sh's ports).
set -euo pipefail
cd "$(dirname "$0")/.."

. infra/bench-env.sh

GO="${GO:-go}"
bin="$TILECACHE_DEVSTACK_DIR/seedbench"
mkdir -p "$TILECACHE_DEVSTACK_DIR"
"$GO" build -o "$bin" ./internal/bench/seedbench

stop() {
  [[ -n "${TILECACHE_BENCH_WMS_URL:-}" ]] || bash infra/wms/down.sh >&2 || true
  [[ -n "${TILECACHE_BENCH_KEEP_STACK:-}" ]] || bash infra/devstack/down.sh >&2 || true
}
trap stop EXIT
[[ -n "${TILECACHE_BENCH_KEEP_STACK:-}" ]] || eval "$(bash infra/devstack/up.sh)"
if [[ -n "${TILECACHE_BENCH_WMS_URL:-}" ]]; then
  wms_url="$TILECACHE_BENCH_WMS_URL"
  wms_pid="${TILECACHE_BENCH_WMS_PID:-0}"
else
  eval "$(bash infra/wms/up.sh)"
  wms_url="$TILECACHE_WMS_URL"
  wms_pid="$(cat "$TILECACHE_WMS_DIR/lighttpd.pid")"
fi
minio_pid="$(cat "$TILECACHE_DEVSTACK_DIR/minio.pid" 2>/dev/null || echo 0)"

echo "bench-vector: WMS $wms_url (pid $wms_pid), MinIO $AWS_ENDPOINT_URL_S3 (pid $minio_pid), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
out="$(mktemp)"
[[ -z "${PROFILE:-}" ]] || mkdir -p "$PROFILE"
for ((i = 1; i <= ${RUNS:-3}; i++)); do
  for format in image/png application/vnd.mapbox-vector-tile; do
    run="$("$bin" -backend aws -wms "$wms_url" -wms-layers polygons,lines,points -format "$format" -measure seed \
      -zoom "${ZOOM:-8}" ${BBOX:+-bbox "$BBOX"} -runs 1 -threads "${THREADS:-4}" -upstream "${UPSTREAM:-4}" \
      -wms-pid "$wms_pid" -store-pid "$minio_pid" ${PROFILE:+-cpuprofile "$PROFILE/${format##*/}_r$i.pprof"})"
    printf '%s\n' "$run" >&2
    printf '%s\n' "$run" | grep '^run 1:' | sed "s|^run 1:|$format|" >>"$out"
  done
done
# Lines: "<format> N tiles in D (R tiles/s), CPU s: seeder C (M ms a tile), WMS W, store S, B bytes stored…"
python3 - "$out" <<'PY'
import re, statistics, sys
rows = {}
pat = re.compile(r"^(\S+) (\d+) tiles in \S+ \(([\d.]+) tiles/s\), CPU s: seeder ([\d.]+) \(([\d.]+) ms a tile\), WMS ([\d.]+), store ([\d.]+), (\d+) bytes stored")
for line in open(sys.argv[1]):
    m = pat.match(line)
    if m:
        rows.setdefault(m[1], []).append([float(v) for v in m.groups()[1:]])
print("%-36s %6s %8s %12s %11s %7s %8s %13s" % ("format (medians)", "tiles", "tiles/s", "seeder CPU s", "ms CPU/tile", "WMS s", "MinIO s", "bytes stored"))
for f, runs in rows.items():
    med = [statistics.median(col) for col in zip(*runs)]
    print("%-36s %6d %8.0f %12.1f %11.2f %7.1f %8.1f %13d" % (f, med[0], med[1], med[2], med[3], med[4], med[5], med[6]))
PY
rm -f "$out"
