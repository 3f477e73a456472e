#!/usr/bin/env bash
# The test command behind `make test`: brings up a local AWS stack and a test
# WMS (MapServer behind lighttpd, infra/wms) of its own (installing what is
# missing, cached), runs every test — the port conformance suites against the
# embedded and the AWS adapters, and the end-to-end HTTP tests once per
# backend — and stops what it started. A stack or WMS that cannot start fails
# the run: tests never skip silently here. At its end (also when a pass
# fails) it prints each pass's per-package times and slowest tests, read from
# the `go test -json` events it records in .devstack/test-results.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
# Builds without the clone's directory in them (-trimpath): the build
# cache's keys then name the module, not the directory, so a new clone of
# code compiled before (CI's clean clone) reuses those builds instead of
# compiling every package of the module again, with and without the race
# detector. The programs the tests build (go build) inherit it; `make
# test` sets it for its go vet too.
[[ " ${GOFLAGS:-} " == *" -trimpath "* ]] || export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"

results="${TILECACHE_TEST_RESULTS_DIR:-$PWD/.devstack/test-results}"
mkdir -p "$results"
"$GO" build -o "$results/testtime" ./infra/testtime
# test_times: the summary of the passes that ran.
test_times() {
  local passes=()
  for p in embedded aws; do [[ -s "$results/all-$p.json" ]] && passes+=("$p=$results/all-$p.json"); done
  [[ ${#passes[@]} -eq 0 ]] || "$results/testtime" summary -n 15 "${passes[@]}" || true
}

# A stack of its own, on ports apart from the development stack's.
export TILECACHE_DEVSTACK_DIR="${TILECACHE_TEST_DEVSTACK_DIR:-$PWD/.devstack/test}"
export TILECACHE_S3_PORT="${TILECACHE_TEST_S3_PORT:-9350}"
export TILECACHE_S3_CONSOLE_PORT="${TILECACHE_TEST_S3_CONSOLE_PORT:-9351}"
export TILECACHE_DYNAMODB_PORT="${TILECACHE_TEST_DYNAMODB_PORT:-9352}"
export TILECACHE_SQS_PORT="${TILECACHE_TEST_SQS_PORT:-9353}"
export TILECACHE_WMS_PORT="${TILECACHE_TEST_WMS_PORT:-9354}"
export TILECACHE_CDN_PORT="${TILECACHE_TEST_CDN_PORT:-9355}"
export TILECACHE_WMS_DIR="${TILECACHE_TEST_WMS_DIR:-$PWD/.devstack/test-wms}"

# The checks that need no stack (gofmt and go vet, staticcheck, the web
# linters and unit tests, the template lints: `make checks`) run in the
# background from the start, beside the stack's start and the installs,
# which mostly wait on disks and packages, and then beside the first
# pass; the run fails at its end when they failed. Their output is printed
# whole when they end.
t0=$SECONDS
checks_pid=""
checks_wait() {
  [[ -n "$checks_pid" ]] || return 0
  local st=0
  wait "$checks_pid" || st=$?
  checks_pid=""
  cat "$results/checks.out" >&2
  if ((st)); then echo "== checks (make checks): FAIL" >&2; else echo "== checks (make checks): ok" >&2; fi
  return "$st"
}
# On an early exit the background checks stop with the run.
trap '[[ -z "$checks_pid" ]] || kill -- "-$checks_pid" 2>/dev/null || true; test_times; bash infra/wms/down.sh >&2 || true; bash infra/devstack/down.sh >&2 || true' EXIT
# A process group of its own (setsid), so that an early exit stops all of it.
setsid -w bash -c 's=$SECONDS; st=0
  "$1" -s --no-print-directory checks GO="$2" > "$3" 2>&1 || st=$?
  echo "== checks (make checks) ended after $((SECONDS - s)) s" >> "$3"
  exit "$st"' checks "${MAKE:-make}" "$GO" "$results/checks.out" &
checks_pid=$!
# go-pmtiles, the PMTiles tool the archive tests read with (a go install
# once), beside the stack's start.
bash infra/pmtiles-cli.sh > "$results/pmtiles-cli.out" 2>&1 &
pmtiles_pid=$!
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
bash infra/browser/install.sh || { echo "make test: Chromium, GDAL, tmux, OWSLib, njs or OpenLayers could not be installed; failing" >&2; exit 1; }
if ! wait "$pmtiles_pid"; then
  cat "$results/pmtiles-cli.out" >&2
  echo "make test: go-pmtiles could not be installed; failing" >&2
  exit 1
fi
echo "== the stack, the WMS and the tools ready after $((SECONDS - t0)) s" >&2
# njs, the engine of the CDN edge's CloudFront Functions runtime: the edge
# functions' tests run functions/edge/*.js under it as well as node. They
# skip, saying so, where it cannot be installed.
export TILECACHE_REQUIRE_DEVSTACK=1
# The stack is this run's own and goes whole when it ends (MinIO's data
# directory with it): the end-to-end tests leave the objects they wrote
# rather than delete them one by one (apptest).
export TILECACHE_TEST_DISPOSABLE_STACK=1

# Two passes, each its own `go test` process: every package on the embedded
# backend (the adapters against the local AWS stack), then the end-to-end and
# REST tests on the AWS backend. By default one after the other: on a 2-core
# machine both passes are short of CPU, so side by side is no faster.
# TILECACHE_TEST_SIDE_BY_SIDE=1 runs them at the same time, and
# TILECACHE_TEST_SHARDS=N (default 1) splits each backend's end-to-end tests
# into N processes (every Nth test name in sorted order), for machines with
# more cores. Every program counts in a metrics registry of its own (so
# the end-to-end tests run in parallel inside a pass) and every test names
# its own tables, queues and key prefixes (testenv.Name), so tests and
# passes share the stack safely. Each pass's readable
# output is printed whole at the end. Every wait of the end-to-end tests has
# its bound stretched (TILECACHE_TEST_WAIT_SCALE, default 3 here): a bound
# ends a stall, it is no speed figure.
export TILECACHE_TEST_WAIT_SCALE="${TILECACHE_TEST_WAIT_SCALE:-3}"
# The race detector is on in the embedded pass, which runs every package:
# the AWS adapters' own suites (dynamo, sqsqueue, s3store and the rest)
# run there against the local stack, under it. The AWS pass repeats the
# end-to-end and REST tests on the AWS backend without it (their code
# above the adapters is the embedded pass's, raced there), on a machine
# both passes keep busy. TILECACHE_TEST_AWS_RACE=1 turns it on
# there too.
aws_race="${TILECACHE_TEST_AWS_RACE:-0}"
# Where it is on, two of its costs buy nothing here: every
# program built with it sleeps a second as it exits (atexit_sleep_ms, for
# reports of goroutines still running; 53 test binaries and the programs
# the tests start), and linking its large test binaries with their DWARF
# tables took half the CPU of a run that runs no test. Stack traces, race
# reports and profiles read the Go symbol table, which -s -w keeps.
export GORACE="${GORACE:+$GORACE }atexit_sleep_ms=0"
side_by_side="${TILECACHE_TEST_SIDE_BY_SIDE:-0}"
shards="${TILECACHE_TEST_SHARDS:-1}"
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "make test: TILECACHE_TEST_SHARDS must be a positive integer, got '$shards'" >&2; exit 2; }
rm -f "$results"/*.json "$results"/*.out "$results"/*.cpu "$results"/*.stack[01]
app=./internal/app
pids=() names=()
# cpu_ticks: the machine's busy and total CPU time so far, in ticks of
# every core (/proc/stat).
cpu_ticks() { awk '/^cpu /{b = $2 + $3 + $4 + $7 + $8; print b, b + $5 + $6; exit}' /proc/stat; }
# stack_ticks: CPU ticks so far of each part of the stack and the WMS
# (the process of its pid file and its children), one "name ticks" a line.
stack_ticks() {
  local f pid
  for f in "$TILECACHE_DEVSTACK_DIR"/*.pid "$TILECACHE_WMS_DIR"/lighttpd.pid; do
    [[ -s "$f" ]] || continue
    pid="$(cat "$f")"
    { echo "$pid"; pgrep -P "$pid" || true; } | while read -r p; do
      awk -v n="$(basename "$f" .pid)" '{ sub(/^.*\) /, ""); print n, $12 + $13 + $14 + $15 }' "/proc/$p/stat" 2>/dev/null || true
    done
  done | awk '{ t[$1] += $2 } END { for (n in t) print n, t[n] }' | sort
}
# pass_cpu NAME: how much CPU a pass took: its own processes (go and the
# test binaries, from `times`) and the whole machine's (the stack, the
# WMS, Chromium and anything else running): whether a pass waits for
# cores or for answers.
pass_cpu() {
  local f="$results/$1.cpu"
  [[ -s "$f" ]] || return 0
  awk 'function sec(v,  m) { m = v; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", v); sub(/s$/, "", v); return m * 60 + v }
       NR == 1 { b0 = $1; t0 = $2; b1 = $3; t1 = $4; wall = $5 }
       NR == 3 { own = sec($1) + sec($2) }
       END { if (wall < 1) wall = 1; if (t1 <= t0) t1 = t0 + 1
             printf "== %s: %d s wall; its processes %.0f s of CPU (%.2f cores); the machine busy %.0f %%\n", name, wall, own, own / wall, 100 * (b1 - b0) / (t1 - t0) }' name="$1" "$f" >&2
  if [[ -s "$results/$1.stack0" && -s "$results/$1.stack1" ]]; then
    join -a 2 -e 0 -o 0,1.2,2.2 "$results/$1.stack0" "$results/$1.stack1" |
      awk -v hz="$(getconf CLK_TCK)" '{ d = ($3 - $2) / hz; sum += d; parts = parts sprintf(" %s %.0f s,", $1, d) }
        END { sub(/,$/, "", parts); printf "   the stack and the WMS meanwhile: %.0f s of CPU (%s)\n", sum, parts }' >&2
  fi
}
# pass NAME [go test args...]: one `go test -json` in the background.
pass() {
  local name="$1"; shift
  local race=(-race)
  [[ "$name" != aws* || "$aws_race" == 1 ]] || race=()
  (
    read -r b0 t0 < <(cpu_ticks); s0=$SECONDS; stack_ticks > "$results/$name.stack0"
    st=0
    "$GO" test -json "${race[@]}" -ldflags="-s -w" -count=1 -timeout 45m "$@" | "$results/testtime" filter "$results/$name.json" > "$results/$name.out" 2>&1 || st=$?
    read -r b1 t1 < <(cpu_ticks); stack_ticks > "$results/$name.stack1"
    { echo "$b0 $t0 $b1 $t1 $((SECONDS - s0))"; times; } > "$results/$name.cpu"
    exit "$st"
  ) &
  pids+=($!) names+=("$name")
  if [[ "$side_by_side" != 1 ]]; then
    # One after the other: this pass ends before the next starts (its
    # status is read again below).
    wait "$!" || true
    echo "== $name: ended after $((SECONDS - start)) s" >&2
  fi
}
start=$SECONDS
if ((shards == 1)); then
  # Three packages at a time, not two: many packages wait on the stack
  # (DynamoDB Local, the SQS server) more than they compute, and a third
  # fills those waits. The embedded pass alone, alternated on this 2-core
  # machine: 348 and 330 s with three, 406 and 385 s with two; the wall
  # per CPU second it took 0.54-0.55 against 0.56.
  pass embedded -p 3 ./...
  # Three end-to-end tests at a time, not two: on the AWS backend a
  # test spends more of its time waiting on the stack (a lane's
  # visibility, a process restarting), and with two the machine was
  # idle 16 % of the pass.
  TILECACHE_TEST_BACKEND=aws pass aws -parallel 3 "$app/..." ./internal/rest/...
else
  others=()
  while IFS= read -r p; do [[ "$p" == tilecache/internal/app ]] || others+=("$p"); done < <("$GO" list ./...)
  # shard_run I N: the -run pattern of shard I of N of the app tests.
  "$GO" test -race -count=1 -list '^Test' "$app" > "$results/app-tests.txt"
  shard_run() {
    grep '^Test' "$results/app-tests.txt" | sort | awk -v i="$1" -v n="$2" 'NR % n == i % n' | paste -sd'|' | sed 's/^/^(/; s/$/)$/'
  }
  pass embedded "${others[@]}"
  for ((i = 1; i <= shards; i++)); do
    pass "embedded-app-$i" -run "$(shard_run "$i" "$shards")" "$app"
    TILECACHE_TEST_BACKEND=aws pass "aws-app-$i" -run "$(shard_run "$i" "$shards")" "$app"
  done
  TILECACHE_TEST_BACKEND=aws pass aws-rest ./internal/rest/...
fi
if [[ "$side_by_side" == 1 ]]; then how="side by side"; else how="one after the other"; fi
echo "== ${#pids[@]} passes $how (embedded: every package; aws: the end-to-end and REST tests; end-to-end tests in $shards shard(s) per backend)" >&2
failed=()
for k in "${!pids[@]}"; do
  if wait "${pids[$k]}"; then st=ok; else st=FAIL; failed+=("${names[$k]}"); fi
  echo "== ${names[$k]}: $st" >&2
  pass_cpu "${names[$k]}"
  cat "$results/${names[$k]}.out"
done
echo "== every pass ended after $((SECONDS - start)) s" >&2
checks_wait || failed+=(checks)
# One stream per backend for the summary.
cat "$results"/embedded*.json > "$results/all-embedded.json"
cat "$results"/aws*.json > "$results/all-aws.json"
if ((${#failed[@]})); then
  echo "make test: failing passes: ${failed[*]}" >&2
  exit 1
fi
