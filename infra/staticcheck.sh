#!/usr/bin/env bash
# make staticcheck (part of make test): installs staticcheck once, the
# pinned version built by the Go in use, into
# ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/bin like the dev stack's
# tools, then runs it over every package of the module, tests included.
# Any finding fails. The checks are staticcheck's defaults. A deliberate
# exception is marked where it stands (//lint:ignore CHECK reason); a check
# too noisy for the whole module would be turned off in a staticcheck.conf
# at the root, with its reason, never all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"

STATICCHECK_MODULE="honnef.co/go/tools"
STATICCHECK_VERSION="v0.8.2"
BIN_DIR="${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/bin"
BIN="$BIN_DIR/staticcheck"

# installed: the binary is there, of the pinned version, and built by this
# Go (staticcheck reads only code of a Go release no newer than its own).
installed() {
  [[ -x "$BIN" ]] || return 1
  "$GO" version -m "$BIN" 2>/dev/null |
    awk -v m="$STATICCHECK_MODULE" -v v="$STATICCHECK_VERSION" -v g="$("$GO" env GOVERSION)" \
      'NR == 1 && $2 == g { built = 1 } $1 == "mod" && $2 == m && $3 == v { mod = 1 } END { exit !(built && mod) }'
}

if ! installed; then
  echo "staticcheck: go install $STATICCHECK_MODULE/cmd/staticcheck@$STATICCHECK_VERSION into $BIN_DIR" >&2
  mkdir -p "$BIN_DIR"
  # From outside the module, so that its go.mod plays no part.
  (cd "$BIN_DIR" && GOBIN="$BIN_DIR" "$GO" install "$STATICCHECK_MODULE/cmd/staticcheck@$STATICCHECK_VERSION") ||
    { echo "staticcheck: go install failed (see above)" >&2; exit 1; }
  installed || { echo "staticcheck: $BIN is not $STATICCHECK_VERSION built by $("$GO" env GOVERSION) after go install" >&2; exit 1; }
fi
echo "staticcheck ./... ($STATICCHECK_VERSION)" >&2
"$BIN" ./...
