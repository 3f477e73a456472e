#!/usr/bin/env bash
# make bench: every figure of the seeding path in one run, each printed as a
# ratio against its reference measured in the same run on the same local AWS
# stack (MinIO, DynamoDB Local, the SQS server; infra/devstack), medians of
# RUNS (default 3), and the requests per 1,000 tiles of seed, reseed and
# truncate:
#
#   seed (test pattern) tiles/s        vs  raw minio-go PutObject objects/s
#   range truncate tiles/s             vs  raw minio-go RemoveObjects keys/s
#   tilecache Store.Put / Store.Delete vs  the same raw calls
#   GET /rest/seed.json req/s          vs  a bare handler serving the same bytes
#   S3 requests per tile of a reseed of unchanged tiles (z0-7: the test
#   pattern renders them as stored, so only listings) and a range truncate
#   (z0-8);
#   DynamoDB writes per 1,000 tiles of a seed of EPSG:900913 z0-8 (87,381
#   tiles) at 16 threads
#
# The WMS comparison with MapCache and MapProxy is `make bench-peers`; render
# on miss and tile hits are `make bench-miss`. Everything runs on 127.0.0.1
# and is stopped at the end; about 8 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
. infra/bench-env.sh
GO="${GO:-go}"
out="$TILECACHE_DEVSTACK_DIR/bench-out"
mkdir -p "$out"
"$GO" build -o "$TILECACHE_DEVSTACK_DIR/seedbench" ./internal/bench/seedbench

trap 'bash infra/devstack/down.sh >&2 || true' EXIT
eval "$(bash infra/devstack/up.sh)"
echo "bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $RUNS runs each" >&2

# median FILE: the median of the numbers in FILE, one per line.
median() { sort -g "$1" | awk '{a[NR]=$1} END {if (NR==0) print 0; else print a[int((NR+1)/2)]}'; }
# metric FILE NAME UNIT: the values of a go test -bench metric (e.g. objects/s);
# NAME's lines end in -GOMAXPROCS, or nothing with -cpu 1.
metric() { grep -E "^$2(-[0-9]+)?[[:space:]]" "$1" | awk -v u="$3" '{for (i=1;i<NF;i++) if ($(i+1)==u) print $i}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b==0) print "n/a"; else printf "%.2f", a/b}'; }

echo "== store: Store.Put and Store.Delete against raw minio-go ($RUNS runs)" >&2
"$GO" test -run '^$' -bench '^Benchmark(Put|PutRaw|Delete|RemoveObjectsRaw)$' -count "$RUNS" ./internal/tilestore/s3store/ | tee "$out/store.txt" >&2
metric "$out/store.txt" BenchmarkPut objects/s >"$out/put"
metric "$out/store.txt" BenchmarkPutRaw objects/s >"$out/putraw"
metric "$out/store.txt" BenchmarkDelete keys/s >"$out/del"
metric "$out/store.txt" BenchmarkRemoveObjectsRaw keys/s >"$out/delraw"

echo "== status: GET /rest/seed.json against a bare handler ($RUNS runs)" >&2
"$GO" test -run '^$' -bench '^Benchmark(StatusGET|BareHandler)$' -benchtime 2s -count "$RUNS" ./internal/app/ | tee "$out/status.txt" >&2
metric "$out/status.txt" BenchmarkStatusGET req/s >"$out/status"
metric "$out/status.txt" BenchmarkBareHandler req/s >"$out/bare"

echo "== seed z0-7 (21,845 tiles, 16 threads), then a reseed of it, every tile unchanged ($RUNS runs)" >&2
"$TILECACHE_DEVSTACK_DIR/seedbench" -backend aws -zoom 7 -threads 16 -runs "$RUNS" -then reseed | tee "$out/seed-reseed.txt" >&2
grep '^run ' "$out/seed-reseed.txt" | sed -E 's/.*\(([0-9]+) tiles\/s\).*/\1/' >"$out/seed"

echo "== seed z0-8 (87,381 tiles, 16 threads), then a range truncate over half the world ($RUNS runs)" >&2
"$TILECACHE_DEVSTACK_DIR/seedbench" -backend aws -zoom 8 -threads 16 -runs "$RUNS" -then truncate \
  -then-bbox=-10000000,-10000000,10000000,10000000 | tee "$out/seed8-truncate.txt" >&2
grep '^then truncate' "$out/seed8-truncate.txt" | sed -E 's/.*\(([0-9]+) tiles\/s\).*/\1/' >"$out/truncate"
grep '^run ' "$out/seed8-truncate.txt" | grep -o 'DynamoDB writes [0-9.]*' | awk '{print $3}' >"$out/ddb"

echo "== access logs: CloudFront parsing and page mapping against a plain bufio.Scanner, one core ($RUNS runs); 1 GiB streamed; DynamoDB writes" >&2
"$GO" test -run '^$' -bench '^Benchmark(CloudFront|Scanner)$' -cpu 1 -count "$RUNS" ./internal/accesslog/ | tee "$out/accesslog.txt" >&2
metric "$out/accesslog.txt" BenchmarkCloudFront lines/s >"$out/cflines"
metric "$out/accesslog.txt" BenchmarkScanner lines/s >"$out/scanlines"
"$GO" test -run '^$' -bench '^BenchmarkIngest1GB$' -benchtime 1x ./internal/accesslog/ | tee "$out/accesslog1g.txt" >&2
metric "$out/accesslog1g.txt" BenchmarkIngest1GB peak-rss-MiB >"$out/logrss"
"$GO" test -run '^$' -bench '^BenchmarkReadLogWrites$' -benchtime 1x -count "$RUNS" ./internal/task/dynamostore/ | tee "$out/readlog.txt" >&2
metric "$out/readlog.txt" BenchmarkReadLogWrites writes/1000lines >"$out/logwrites"
echo "== geometry: planning a 10,000-vertex country outline at z0-16, and one level against orb's tilecover ($RUNS runs)" >&2
"$GO" test -run '^$' -bench '^Benchmark(PlanCountry/z0-16/|CoverReference)' -benchtime 3x -count "$RUNS" ./internal/area/ | tee "$out/area.txt" >&2
metric "$out/area.txt" 'BenchmarkPlanCountry/z0-16/order0' Mtiles/s >"$out/planrows"
metric "$out/area.txt" 'BenchmarkPlanCountry/z0-16/order0' B/op >"$out/planbytes"
metric "$out/area.txt" 'BenchmarkCoverReference/sweep' Mtiles/s >"$out/sweep"
metric "$out/area.txt" 'BenchmarkCoverReference/orb-tilecover' Mtiles/s >"$out/orbcover"
planrows=$(median "$out/planrows"); planbytes=$(median "$out/planbytes"); sweep=$(median "$out/sweep"); orbcover=$(median "$out/orbcover")

cflines=$(median "$out/cflines"); scanlines=$(median "$out/scanlines"); logrss=$(median "$out/logrss"); logwrites=$(median "$out/logwrites")

seed=$(median "$out/seed"); put=$(median "$out/put"); putraw=$(median "$out/putraw")
trunc=$(median "$out/truncate"); del=$(median "$out/del"); delraw=$(median "$out/delraw")
status=$(median "$out/status"); bare=$(median "$out/bare")
grep '^then reseed' "$out/seed-reseed.txt" | grep -o 'S3 requests [0-9.]*' | awk '{print $3}' >"$out/reseedS3"
grep '^then reseed' "$out/seed-reseed.txt" | grep -o 'PUT [0-9.]*' | awk '{print $2}' >"$out/reseedPut"
grep '^then truncate' "$out/seed8-truncate.txt" | grep -o 'S3 requests [0-9.]*' | awk '{print $3}' >"$out/truncS3"
grep '^then truncate' "$out/seed8-truncate.txt" | grep -o 'DELETE [0-9.]*' | awk '{print $2}' >"$out/truncDel"
reseedS3=$(median "$out/reseedS3"); reseedPut=$(median "$out/reseedPut"); truncS3=$(median "$out/truncS3"); truncDel=$(median "$out/truncDel"); ddb=$(median "$out/ddb")

cat <<EOF
bench: medians of $RUNS runs on one local AWS stack; ratio = ours / reference (targets of the performance issue)
  seed tiles/s            $seed  vs raw PutObject objects/s $putraw   ratio $(ratio "$seed" "$putraw")   (target >= 0.8)
  Store.Put objects/s     $put  vs raw PutObject objects/s $putraw   ratio $(ratio "$put" "$putraw")
  range truncate tiles/s  $trunc  vs raw RemoveObjects keys/s $delraw   ratio $(ratio "$trunc" "$delraw")   (target >= 0.8; z0-8, 21,909 positions)
  Store.Delete keys/s     $del  vs raw RemoveObjects keys/s $delraw   ratio $(ratio "$del" "$delraw")
  status GET req/s        $status  vs bare handler req/s $bare   ratio $(ratio "$status" "$bare")   (target >= 0.5)
  reseed of unchanged tiles, S3 requests per 1,000 tiles: $reseedS3, of which PUT $reseedPut   (target <= 10: listings only)
  truncate S3 requests per 1,000 tile positions: $truncS3, of which DELETE $truncDel   (target <= 10 plus deletes)
  seed z0-8 at 16 threads, DynamoDB writes per 1,000 tiles: $ddb   (target <= 5)
  access log lines/s (CloudFront, one core)  $cflines  vs bufio.Scanner lines/s $scanlines   ratio $(ratio "$cflines" "$scanlines")   (target >= 500000 lines/s)
  access log of 1 GiB streamed: peak RSS $logrss MiB   (target <= 128)
  access log DynamoDB writes per 1,000 lines (200,000 reads, most on 50 of 1,000 pages): $logwrites   (target <= 20)
  geometry plan, 10,756-vertex outline z0-16 (13.4 M tiles): $planrows M tiles/s, $planbytes bytes   (target >= 5 M tiles/s)
  geometry cover of one level (z12) M tiles/s  $sweep  vs orb tilecover $orbcover   ratio $(ratio "$sweep" "$orbcover")
EOF
