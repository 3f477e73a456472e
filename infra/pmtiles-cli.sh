#!/usr/bin/env bash
# Installs go-pmtiles, the PMTiles format's reference command-line tool,
# once: the pinned version built by the Go in use, into
# ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/bin like staticcheck. The
# tests read the archives tilecache writes back with it (`go-pmtiles verify`
# of the whole structure, `go-pmtiles tile` of tiles by z/x/y); tilecache
# itself does not link it (its module brings some 800 packages of cloud
# SDKs). `make test` runs this; the tests find the program there, or at
# $TILECACHE_PMTILES_CLI.
set -euo pipefail
GO="${GO:-go}"

PMTILES_MODULE="github.com/protomaps/go-pmtiles"
PMTILES_VERSION="v1.31.2"
BIN_DIR="${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/bin"
BIN="$BIN_DIR/go-pmtiles"

# installed: the binary is there, of the pinned version.
installed() {
  [[ -x "$BIN" ]] || return 1
  "$GO" version -m "$BIN" 2>/dev/null |
    awk -v m="$PMTILES_MODULE" -v v="$PMTILES_VERSION" '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

if ! installed; then
  echo "pmtiles-cli: go install $PMTILES_MODULE@$PMTILES_VERSION into $BIN_DIR" >&2
  mkdir -p "$BIN_DIR"
  # From outside the module, so that its go.mod plays no part.
  (cd "$BIN_DIR" && GOBIN="$BIN_DIR" GOFLAGS=-trimpath "$GO" install "$PMTILES_MODULE@$PMTILES_VERSION") ||
    { echo "pmtiles-cli: go install failed (see above)" >&2; exit 1; }
  installed || { echo "pmtiles-cli: $BIN is not $PMTILES_VERSION after go install" >&2; exit 1; }
fi
