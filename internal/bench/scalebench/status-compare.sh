#!/usr/bin/env bash
# status-compare.sh BEFORE AFTER [SIZE] [ROUNDS]: the task status before and
# after a change, side by side in one run. BEFORE and AFTER are scalebench
# binaries (each built from its own tree); each sets up a table of its own
# (SIZE, default 10000,8,128, finished 30 s before), then they time List in
# turns, ROUNDS times (default 6), 15 calls each, so both see the same
# machine load. Needs the local stack's environment (AWS_ENDPOINT_URL_*).
set -euo pipefail
before="$1" after="$2" size="${3:-10000,8,128}" rounds="${4:-6}"
table() { sed -n 's/.*table \([^ ]*\) .*/\1/p'; }
echo "== set up $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
out_b="$("$before" -status "$size" -status-age 30s -status-keep -status-calls 1)"
echo "before: $out_b"
out_a="$("$after" -status "$size" -status-age 30s -status-keep -status-calls 1)"
echo "after: $out_a"
tb="$(table <<<"$out_b")" ta="$(table <<<"$out_a")"
trap 'for t in "$tb" "$ta"; do aws dynamodb delete-table --table-name "$t" >/dev/null 2>&1 || true; done' EXIT
for r in $(seq "$rounds"); do
  echo "== round $r $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "before: $("$before" -status "$size" -status-age 30s -status-table "$tb" | tail -2 | tr -s ' ' | tr '\n' ' ')"
  echo "after:  $("$after" -status "$size" -status-age 30s -status-table "$ta" | tail -2 | tr -s ' ' | tr '\n' ' ')"
done
echo "== end $(date -u +%T)"
