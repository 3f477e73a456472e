#!/usr/bin/env bash
# make bench: every figure of the seeding path in one run, each printed as a
# ratio against its reference measured in the same run on the same local AWS
# stack (MinIO, DynamoDB Local, the SQS server; infra/devstack), medians of
# RUNS (default 3), and the requests per 1,000 tiles of seed, reseed and
# truncate:
#
#   seed (test pattern) tiles/s        vs  raw minio-go PutObject objects/s
#   range truncate tiles/s             vs  raw minio-go RemoveObjects keys/s
#   export to PMTiles tiles/s (z0-8)   vs  a listing and GET of the same objects
#   tilecache Store.Put / Store.Delete vs  the same raw calls
#   GET /rest/seed.json req/s          vs  a bare handler serving the same bytes
#   S3 requests per tile of a seed, of a reseed of unchanged tiles (z0-7:
#   the test pattern renders them as stored, so only listings), of a seed
#   over levels where every other metatile misses a tile (z0-7) and of a
#   range truncate (z0-8);
#   DynamoDB writes per 1,000 tiles of a seed of EPSG:900913 z0-8 (87,381
#   tiles) at 16 threads
#
# The WMS comparison with MapCache and MapProxy is `make bench-peers`; render
# on miss and tile hits are `make bench-miss`. Everything runs on 127.0.0.1
# and is stopped at the end; about 12 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
# The geometry benchmarks: `go test` splits -bench at each "/" and matches
# each part against one level of names, so the levels are given one by one.
AREA_BENCH='^Benchmark(PlanCountry|CoverReference)$/^(z0-16|sweep|orb-tilecover)$'
. infra/bench-env.sh
GO="${GO:-go}"
out="$TILECACHE_DEVSTACK_DIR/bench-out"
mkdir -p "$out"
"$GO" build -o "$TILECACHE_DEVSTACK_DIR/seedbench" ./internal/bench/seedbench

trap 'bash infra/devstack/down.sh >&2 || true' EXIT
eval "$(bash infra/devstack/up.sh)"
echo "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $RUNS runs each" >&2

echo "== store: Store.Put and Store.Delete against raw minio-go ($RUNS runs)" >&2
"$GO" test -run '^$' -bench '^Benchmark(Put|PutRaw|Delete|RemoveObjectsRaw)$' -count "$RUNS" ./internal/tilestore/s3store/ | tee "$out/store.txt" >&2

echo "== status: GET /rest/seed.json against a bare handler ($RUNS runs)" >&2
"$GO" test -run '^$' -bench '^Benchmark(StatusGET|BareHandler)$' -benchtime 2s -count "$RUNS" ./internal/app/ | tee "$out/status.txt" >&2

echo "== seed z0-7 (21,845 tiles, 16 threads), then a reseed of it, every tile unchanged ($RUNS runs)" >&2
"$TILECACHE_DEVSTACK_DIR/seedbench" -backend aws -zoom 7 -threads 16 -runs "$RUNS" -then reseed | tee "$out/seed-reseed.txt" >&2

echo "== seed z0-7 (21,845 tiles, 16 threads), then one tile of every other metatile deleted and a seed again ($RUNS runs)" >&2
"$TILECACHE_DEVSTACK_DIR/seedbench" -backend aws -zoom 7 -threads 16 -runs "$RUNS" -then seed-holes | tee "$out/seed-holes.txt" >&2

echo "== seed z0-8 (87,381 tiles, 16 threads), an export of it to PMTiles beside a listing and GET of the same objects, then a range truncate over half the world ($RUNS runs)" >&2
"$TILECACHE_DEVSTACK_DIR/seedbench" -backend aws -zoom 8 -threads 16 -runs "$RUNS" -export -then truncate \
  -then-bbox=-10000000,-10000000,10000000,10000000 | tee "$out/seed8-truncate.txt" >&2

echo "== access logs: CloudFront parsing and page mapping against a plain bufio.Scanner, one core ($RUNS runs); 1 GiB streamed; DynamoDB writes" >&2
"$GO" test -run '^$' -bench '^Benchmark(CloudFront|Scanner)$' -cpu 1 -count "$RUNS" ./internal/accesslog/ | tee "$out/accesslog.txt" >&2
"$GO" test -run '^$' -bench '^BenchmarkIngest1GB$' -benchtime 1x ./internal/accesslog/ | tee "$out/accesslog1g.txt" >&2
"$GO" test -run '^$' -bench '^BenchmarkReadLogWrites$' -benchtime 1x -count "$RUNS" ./internal/state/dynamo/ | tee "$out/readlog.txt" >&2
echo "== geometry: planning a 10,000-vertex country outline at z0-16, and one level against orb's tilecover ($RUNS runs)" >&2
"$GO" test -run '^$' -bench "$AREA_BENCH" -benchtime 3x -count "$RUNS" ./internal/area/ | tee "$out/area.txt" >&2

bash infra/bench-summary.sh "$out" "$RUNS"
