#!/usr/bin/env bash
# The summary of `make bench` (infra/bench.sh), read from the outputs it
# recorded in OUT_DIR: bench-summary.sh OUT_DIR [RUNS]. A figure whose lines
# are missing from its output fails the summary, naming the file, rather than
# printing an empty or made-up number. Kept apart so that a test can run it on
# recorded outputs (internal/bench/summary_test.go).
set -euo pipefail
out="$1"
RUNS="${2:-3}"

# median NAME VALUES...: the median of the values; fails when there are none.
median() {
  local name="$1"; shift
  if [[ $# -eq 0 ]]; then
    echo "bench-summary: no value of $name in $out (the run that makes it failed or printed nothing)" >&2
    exit 1
  fi
  printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
# metric FILE NAME UNIT: the values of a go test -bench metric (e.g. objects/s);
# NAME's lines end in -GOMAXPROCS, or nothing with -cpu 1.
metric() { { grep -E "^$2(-[0-9]+)?[[:space:]]" "$out/$1" || true; } | awk -v u="$3" '{for (i=1;i<NF;i++) if ($(i+1)==u) print $i}'; }
# field FILE PREFIX LABEL: the number after LABEL on the lines starting with PREFIX.
field() { { grep "^$2" "$out/$1" || true; } | { grep -o "$3 [0-9.]*" || true; } | awk '{print $NF}'; }
# rate FILE PREFIX: the tiles/s in parentheses on the lines starting with PREFIX.
rate() { { grep "^$2" "$out/$1" || true; } | sed -nE 's/.*\(([0-9]+) tiles\/s\).*/\1/p'; }
# readrate FILE PREFIX: the objects/s in parentheses, "(N/s)", on the lines starting with PREFIX.
readrate() { { grep "^$2" "$out/$1" || true; } | sed -nE 's/.*\(([0-9]+)\/s\).*/\1/p'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b==0) print "n/a"; else printf "%.2f", a/b}'; }
# m NAME COMMAND...: the median of what COMMAND prints, one value a line.
m() { local name="$1"; shift; local v; mapfile -t v < <("$@"); median "$name" "${v[@]}"; }

put=$(m Put metric store.txt BenchmarkPut objects/s)
putraw=$(m PutRaw metric store.txt BenchmarkPutRaw objects/s)
del=$(m Delete metric store.txt BenchmarkDelete keys/s)
delraw=$(m RemoveObjectsRaw metric store.txt BenchmarkRemoveObjectsRaw keys/s)
status=$(m StatusGET metric status.txt BenchmarkStatusGET req/s)
bare=$(m BareHandler metric status.txt BenchmarkBareHandler req/s)
seed=$(m "seed tiles/s" rate seed-reseed.txt 'run ')
trunc=$(m "truncate tiles/s" rate seed8-truncate.txt 'then truncate')
export=$(m "export tiles/s" rate seed8-truncate.txt 'then export')
exportRead=$(m "export's list and GET objects/s" readrate seed8-truncate.txt 'then export')
exportRSS=$(m "export's peak RSS" field seed8-truncate.txt 'then export' 'peak RSS')
ddb=$(m "DynamoDB writes" field seed8-truncate.txt 'run ' 'DynamoDB writes')
reseedS3=$(m "reseed S3 requests" field seed-reseed.txt 'then reseed' 'S3 requests')
reseedPut=$(m "reseed PUT" field seed-reseed.txt 'then reseed' 'PUT')
seedS3=$(m "seed S3 requests" field seed-reseed.txt 'run ' 'S3 requests')
holesS3=$(m "seed over holes S3 requests" field seed-holes.txt 'then seed-holes' 'S3 requests')
holesPut=$(m "seed over holes PUT" field seed-holes.txt 'then seed-holes' 'PUT')
holesDeleted=$(m "holes deleted" field seed-holes.txt 'holes:' 'deleted')
truncS3=$(m "truncate S3 requests" field seed8-truncate.txt 'then truncate' 'S3 requests')
truncDel=$(m "truncate DELETE" field seed8-truncate.txt 'then truncate' 'DELETE')
cflines=$(m CloudFront metric accesslog.txt BenchmarkCloudFront lines/s)
scanlines=$(m Scanner metric accesslog.txt BenchmarkScanner lines/s)
logrss=$(m Ingest1GB metric accesslog1g.txt BenchmarkIngest1GB peak-rss-MiB)
logwrites=$(m ReadLogWrites metric readlog.txt BenchmarkReadLogWrites writes/1000lines)
planrows=$(m "PlanCountry z0-16" metric area.txt 'BenchmarkPlanCountry/z0-16/order0' Mtiles/s)
planbytes=$(m "PlanCountry z0-16 B/op" metric area.txt 'BenchmarkPlanCountry/z0-16/order0' B/op)
sweep=$(m "CoverReference sweep" metric area.txt 'BenchmarkCoverReference/sweep' Mtiles/s)
orbcover=$(m "CoverReference orb" metric area.txt 'BenchmarkCoverReference/orb-tilecover' Mtiles/s)

cat <<SUMMARY
bench: medians of $RUNS runs on one local AWS stack; ratio = ours / reference (targets of the performance issue)
  seed tiles/s            $seed  vs raw PutObject objects/s $putraw   ratio $(ratio "$seed" "$putraw")   (target >= 0.8)
  Store.Put objects/s     $put  vs raw PutObject objects/s $putraw   ratio $(ratio "$put" "$putraw")
  range truncate tiles/s  $trunc  vs raw RemoveObjects keys/s $delraw   ratio $(ratio "$trunc" "$delraw")   (target >= 0.8; z0-8, 21,909 positions)
  Store.Delete keys/s     $del  vs raw RemoveObjects keys/s $delraw   ratio $(ratio "$del" "$delraw")
  export tiles/s          $export  vs list and GET objects/s $exportRead   ratio $(ratio "$export" "$exportRead")   (target >= 0.8; z0-8 to PMTiles; peak RSS $exportRSS MiB)
  status GET req/s        $status  vs bare handler req/s $bare   ratio $(ratio "$status" "$bare")   (target >= 0.5)
  seed z0-7, S3 requests per 1,000 tiles: $seedS3   (target <= 1010: one PUT per tile)
  seed z0-7 over every other metatile missing one tile ($holesDeleted holes), S3 requests per 1,000 tiles: $holesS3, of which PUT $holesPut   (the holes alone are PUT)
  reseed of unchanged tiles, S3 requests per 1,000 tiles: $reseedS3, of which PUT $reseedPut   (target <= 10: listings only)
  truncate S3 requests per 1,000 tile positions: $truncS3, of which DELETE $truncDel   (target <= 10 plus deletes)
  seed z0-8 at 16 threads, DynamoDB writes per 1,000 tiles: $ddb   (target <= 5)
  access log lines/s (CloudFront, one core)  $cflines  vs bufio.Scanner lines/s $scanlines   ratio $(ratio "$cflines" "$scanlines")   (target >= 500000 lines/s)
  access log of 1 GiB streamed: peak RSS $logrss MiB   (target <= 128)
  access log DynamoDB writes per 1,000 lines (200,000 reads, most on 50 of 1,000 pages): $logwrites   (target <= 20)
  geometry plan, 10,756-vertex outline z0-16 (13.4 M tiles): $planrows M tiles/s, $planbytes bytes   (target >= 5 M tiles/s)
  geometry cover of one level (z12) M tiles/s  $sweep  vs orb tilecover $orbcover   ratio $(ratio "$sweep" "$orbcover")
SUMMARY
