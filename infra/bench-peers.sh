#!/usr/bin/env bash
# make bench-peers: seeds the same job with tilecache and with MapCache (and
# optionally MapProxy) from the same WMS into the same MinIO, interleaved in
# one run, and prints medians and ratios.
#
# The job is the one of `make bench-seed`: EPSG:900913/EPSG:3857 z0–6 of the
# world, 5,461 tiles in 4×4 metatiles without gutter, PNG, into S3 (MinIO).
# The peers kit (PEERS_DIR) holds the WMS (MapServer 8 behind lighttpd, its
# map file and generated data), the MapCache and MapProxy configurations and
# the measuring wrapper scripts/measure.sh; every run — ours too — is
# measured by that wrapper: wall time, the seeder's CPU, the CPU of the
# mapserv workers and of MinIO, and the machine's other CPU (noise; for us it
# includes DynamoDB Local and the SQS server, which hold our task state).
#
# Settings (environment):
#   PEERS_DIR=../shared/peers   the peers kit
#   REPS=3                      repetitions (medians are printed)
#   CONCS="4"                   concurrencies: MapCache -n, MapProxy -c, our
#                               threadCount and upstream cap
#   PEERS="mapcache"            add mapproxy for MapProxy's S3 cache (≈2 min a run)
#   UPSTREAM_FORMATS="image/png image/tiff"
#                               the GetMap formats our seeds ask for (runs
#                               tilecache_… and tilecache_tiff_…); the peers
#                               ask for PNG, as configured
#   MAPPROXY_REPS=$REPS         run MapProxy in the first this many repetitions only
#   RUN=/tmp/tilecache-peers    state, logs and raw.tsv
#   PROFILE=dir                 also write a CPU profile of each of our seeds
#                               there (go tool pprof -tagfocus stage=… reads
#                               the seed's stages from its labels)
#   BEFORE=rev                  also seed with the tilecache of git revision
#                               rev (runs tilecache_before…), interleaved
#                               with ours in the same repetitions
# Needs root to install the Debian packages on first use. Everything listens
# on 127.0.0.1 (WMS :8081, MinIO :9000, our DynamoDB/SQS on 9372/9373) and
# is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

PEERS_DIR="$(cd "${PEERS_DIR:-$ROOT/../shared/peers}" && pwd)"
REPS="${REPS:-3}"
CONCS="${CONCS:-4}"
PEERS="${PEERS:-mapcache}"
MAPPROXY_REPS="${MAPPROXY_REPS:-$REPS}"
UPSTREAM_FORMATS="${UPSTREAM_FORMATS:-image/png image/tiff}"
export RUN="${RUN:-/tmp/tilecache-peers}"
export OUTTSV="$RUN/raw.tsv"
GO="${GO:-go}"
TILES=5461

log() { printf 'bench-peers: %s\n' "$*" >&2; }
die() {
  printf 'bench-peers: error: %s\n' "$*" >&2
  exit 1
}

[[ -x "$PEERS_DIR/scripts/measure.sh" && -r "$PEERS_DIR/upstream/world.map" ]] ||
  die "no peers kit at $PEERS_DIR (set PEERS_DIR)"

# Debian packages of the peers and their WMS.
pkgs=(mapserver-bin cgi-mapserver lighttpd mapcache-tools python3-gdal python3-boto3 python3-numpy time)
[[ " $PEERS " == *" mapproxy "* ]] && pkgs+=(mapproxy python3-mapproxy python3-pil)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
  ((EUID == 0)) || die "missing packages: ${missing[*]} (apt-get install -y --no-install-recommends ${missing[*]})"
  log "installing ${missing[*]}"
  policy=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then # keep Debian's lighttpd service from starting
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
  [[ -z "$policy" ]] || rm -f /usr/sbin/policy-rc.d
fi

# MinIO: the dev stack's pinned build.
bash infra/devstack/install.sh
export MINIO="${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/bin/minio"

if [[ ! -s "$PEERS_DIR/data/gen/hillshade.tif" ]]; then
  log "generating the peers' dataset (once)"
  /usr/bin/python3 "$PEERS_DIR/scripts/gen_data.py" >&2
fi

mkdir -p "$RUN/cache/mapcache-locks"
: >"$OUTTSV"
: >"$RUN/upstream.tsv"
: >"$RUN/stored.tsv"
export TILECACHE_DEVSTACK_DIR="$RUN/devstack"
export TILECACHE_S3_PORT=9370 TILECACHE_S3_CONSOLE_PORT=9371 TILECACHE_DYNAMODB_PORT=9372 TILECACHE_SQS_PORT=9373 TILECACHE_CDN_PORT=9374
stop() {
  local lp kids=""
  if [[ -s "$RUN/lighttpd.pid" ]]; then
    # lighttpd 1.4.69 leaves its FastCGI workers running on TERM: stop them by pid too.
    lp="$(cat "$RUN/lighttpd.pid")"
    kids="$(cat /proc/"$lp"/task/*/children 2>/dev/null || true)"
    bash "$PEERS_DIR/scripts/stop_upstream.sh" >&2 || true
    # shellcheck disable=SC2086 # a list of pids
    [[ -z "$kids" ]] || kill $kids 2>/dev/null || true
  fi
  [[ ! -s "$RUN/minio.pid" ]] || kill "$(cat "$RUN/minio.pid")" 2>/dev/null || true
  bash infra/devstack/down.sh >&2 || true
}
trap stop EXIT

wms_pid="$(bash "$PEERS_DIR/scripts/start_upstream.sh")"
minio_pid="$(bash "$PEERS_DIR/scripts/start_minio.sh")"
eval "$(bash infra/devstack/up.sh)"
# Our tiles go to the peers' MinIO, bucket "tiles", under a fresh prefix per run.
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000 TILECACHE_S3_BUCKET=tiles
export AWS_ACCESS_KEY_ID=benchadmin AWS_SECRET_ACCESS_KEY=benchsecret123
"$GO" build -o "$RUN/seedbench" ./internal/bench/seedbench
seeders=(tilecache)
if [[ -n "${BEFORE:-}" ]]; then
  rm -rf "$RUN/before" && git worktree prune
  git worktree add -q --detach "$RUN/before" "$BEFORE"
  (cd "$RUN/before" && "$GO" build -o "$RUN/seedbench-before" ./internal/bench/seedbench)
  git worktree remove --force "$RUN/before"
  seeders=(tilecache_before tilecache)
fi
[[ -z "${PROFILE:-}" ]] || mkdir -p "$PROFILE"
wms=http://127.0.0.1:8081/wms
log "WMS $wms (lighttpd pid $wms_pid), MinIO :9000 (pid $minio_pid); load $(cut -d' ' -f1-3 /proc/loadavg)"

count() { /usr/bin/python3 "$PEERS_DIR/scripts/s3_count.py" "$@"; }
# stored LABEL PREFIX: appends the objects and bytes under PREFIX to stored.tsv.
stored() {
  /usr/bin/python3 - "$2" <<'PY' | sed "s/^/$1\t/" >>"$RUN/stored.tsv"
import sys, boto3
s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:9000", region_name="us-east-1",
                  aws_access_key_id="benchadmin", aws_secret_access_key="benchsecret123")
n = size = 0
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="tiles", Prefix=sys.argv[1]):
    for o in page.get("Contents", []):
        n, size = n + 1, size + o["Size"]
print(f"{n}\t{size}")
PY
}
# label suffix of an upstream format: "" for PNG, _tiff for image/tiff.
fmtlabel() { [[ "$1" == image/png ]] || { f="${1#image/}" && echo "_${f//[^a-z0-9]/}"; }; }
M="$PEERS_DIR/scripts/measure.sh"
cd "$PEERS_DIR"
for rep in $(seq "$REPS"); do
  for c in $CONCS; do
    for f in $UPSTREAM_FORMATS; do
      fl="$(fmtlabel "$f")"
      "$RUN/seedbench" -backend aws -wms "$wms" -upstream-format "$f" -measure upstream -runs 1 -zoom 6 -upstream "$c" \
        >"$RUN/upstream${fl}_c${c}_r$rep.log"
      printf 'upstream_alone%s_c%s\t%s\n' "$fl" "$c" "$(awk '/median/{print $(NF-4)}' "$RUN/upstream${fl}_c${c}_r$rep.log")" >>"$RUN/upstream.tsv"
    done
    for p in tilecache $PEERS; do
      case $p in
        tilecache)
          for f in $UPSTREAM_FORMATS; do
            fl="$(fmtlabel "$f")"
            for s in "${seeders[@]}"; do
              bin="$RUN/seedbench"
              [[ $s == tilecache ]] || bin="$RUN/seedbench-before"
              label="$s${fl}_s3_seed_c${c}_r$rep"
              "$M" "$label" $TILES "$bin" -backend aws -wms "$wms" -upstream-format "$f" \
                -measure seed -runs 1 -zoom 6 -threads "$c" -upstream "$c" ${PROFILE:+-cpuprofile "$PROFILE/$label.pprof"} >&2
              stored "$label" seedbench-
              count seedbench- --delete >/dev/null
            done
          done
          ;;
        mapcache)
          count mapcache/ --delete >/dev/null
          "$M" "mapcache_s3_seed_n${c}_r$rep" $TILES mapcache_seed -c mapcache/mapcache.xml -t world_s3 \
            -g GoogleMapsCompatible -z 0,6 -n "$c" -b >&2
          stored "mapcache_s3_seed_n${c}_r$rep" mapcache/
          ;;
        mapproxy)
          ((rep <= MAPPROXY_REPS)) || continue
          count mapproxy/ --delete >/dev/null
          "$M" "mapproxy_s3_seed_c${c}_r$rep" $TILES mapproxy-seed -f mapproxy/mapproxy.yaml -s mapproxy/seed.yaml \
            --seed s3_3857 -c "$c" >&2
          ;;
      esac
    done
  done
done
cd "$ROOT"

# Medians per peer and concurrency; columns of measure.sh:
# label tiles wall tiles/s seeder_cpu rss upstream_cpu minio_cpu busy other load rc
echo
printf '%-26s %8s %9s %7s %8s %8s %7s %10s %8s %11s %7s\n' run tiles/s 'seeder s' 'WMS s' 'MinIO s' 'other s' 'RSS MB' 'stored MB' objects 'CPU ms/tile' failed
awk -F'\t' '
  function med(key, col,   n, i, j, t, a) {
    n = split(vals[key, col], a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return a[int((n + 1) / 2)]
  }
  {
    key = $1; sub(/_r[0-9]+$/, "", key)
  }
  FILENAME == ARGV[1] { # stored.tsv: label objects bytes
    vals[key, "objects"] = vals[key, "objects"] " " $2
    vals[key, "bytes"] = vals[key, "bytes"] " " $3
    next
  }
  { # raw.tsv of measure.sh: label tiles wall tiles/s seeder_cpu rss upstream_cpu minio_cpu busy other load rc
    if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
    tiles[key] = $2
    for (c = 4; c <= 10; c++) vals[key, c] = vals[key, c] " " $c
    if ($12 != 0) failed[key]++
  }
  END {
    for (k = 1; k <= nk; k++) {
      key = order[k]
      rate[key] = med(key, 4); cpu[key] = med(key, 5); bytes[key] = med(key, "bytes")
      printf "%-26s %8.1f %9.1f %7.1f %8.1f %8.1f %7.0f %10.2f %8d %11.2f %7d\n", key, rate[key], cpu[key], med(key, 7),
        med(key, 8), med(key, 10), med(key, 6), bytes[key] / 1e6, med(key, "objects"),
        1000 * (cpu[key] + med(key, 7) + med(key, 8)) / tiles[key], failed[key]
    }
    print ""
    for (k = 1; k <= nk; k++) {
      key = order[k]
      if (key !~ /^tilecache/) continue
      c = key; sub(/^.*_c/, "", c)
      name = key; sub(/_s3_seed_c[0-9]+$/, "", name)
      if (("mapcache_s3_seed_n" c) in rate) {
        m = "mapcache_s3_seed_n" c
        printf "%s / MapCache at %s: tiles/s %.2f, seeder CPU %.2f", name, c, rate[key] / rate[m], cpu[key] / (cpu[m] > 0 ? cpu[m] : 1)
        if (bytes[m] > 0) printf ", stored bytes %.3f", bytes[key] / bytes[m]
        print ""
      }
      b = key; sub(/^tilecache/, "tilecache_before", b)
      if (key !~ /^tilecache_before/ && b in rate)
        printf "%s / before at %s: tiles/s %.2f, seeder CPU %.2f\n", name, c, rate[key] / rate[b], cpu[key] / (cpu[b] > 0 ? cpu[b] : 1)
      if (("mapproxy_s3_seed_c" c) in rate)
        printf "%s / MapProxy tiles/s at %s: %.2f\n", name, c, rate[key] / rate["mapproxy_s3_seed_c" c]
    }
  }' "$RUN/stored.tsv" "$OUTTSV"
awk -F'\t' '{ v[$1] = v[$1] " " $2 } END { for (k in v) print k ":" v[k] " GetMaps/s of 1024²" }' "$RUN/upstream.tsv"
echo "raw: $OUTTSV, logs: $RUN"
