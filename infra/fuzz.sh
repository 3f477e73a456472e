#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each (`make fuzz`).
#   FUZZTIME   time per target (default 10s; go test -fuzztime syntax)
#   FUZZ       regexp of target names to run (default all)
#   FUZZ_SAVE  =N: copy up to N inputs each target's run found interesting
#              from Go's fuzz cache into its committed corpus
#              (testdata/fuzz/<Target>/), to be reviewed and committed.
# Failing inputs are written to testdata/fuzz by go test itself; the run
# stops at the first failing target.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-10s}"
FILTER="${FUZZ:-.}"
SAVE="${FUZZ_SAVE:-0}"
cache="$("$GO" env GOCACHE)/fuzz"
module="$("$GO" list -m)"
count=0
while IFS= read -r line; do
  file="${line%%:*}"
  name="${line#*:func }"
  name="${name%%(*}"
  [[ "$name" =~ $FILTER ]] || continue
  dir="$(dirname "$file")"
  pkg="./${dir#./}"
  echo "fuzz: $pkg $name for $FUZZTIME" >&2
  "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" >&2
  count=$((count + 1))
  if ((SAVE > 0)); then
    from="$cache/$module/${dir#./}/$name"
    to="$dir/testdata/fuzz/$name"
    if [[ -d "$from" ]]; then
      mkdir -p "$to"
      n=0
      while IFS= read -r f && ((n < SAVE)); do
        [[ -e "$to/$(basename "$f")" ]] || { cp "$f" "$to/"; n=$((n + 1)); }
      done < <(ls -t "$from"/* 2>/dev/null)
      echo "fuzz: saved $n inputs to $to" >&2
    fi
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | sed -E 's/^([^:]+):[0-9]+:/\1:/' | sort)
echo "fuzz: $count targets, $FUZZTIME each, no failure" >&2
