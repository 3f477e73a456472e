#!/usr/bin/env bash
# Installs what the browser and map-client tests need, from Debian packages:
#   chromium   headless Chromium for the demo map page test (internal/app/demo_test.go)
#   gdal-bin   gdalinfo, gdal_translate: a real map client reading the TMS documents
#              (internal/app/gdal_test.go; infra/wms/install.sh installs it too)
#   tmux       a real terminal for the seeding command's progress bars
#              (internal/cli/tty_test.go reads the screen with capture-pane)
#   python3-owslib  OWSLib, a real WMTS client reading the capabilities
#              (internal/app/wmts_test.go)
#   njs        the JavaScript engine of CloudFront Functions' runtime: the edge
#              functions run under it beside node (internal/edgepath/runtimes_test.go)
# and, from npm, OpenLayers' full build (the package ol, dist/ol.js and
# ol.css) into ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/openlayers/
# for the WMTS map page test (internal/app/openlayers_test.go); and axe-core's
# axe.min.js into .../tools/axe-core/ for the console's accessibility test
# (internal/app/console_test.go); and the pmtiles library's browser build
# (dist/pmtiles.js) into .../tools/pmtiles/ for the PMTiles archive test
# (internal/archive/pmtiles/js_test.go).
# Idempotent: does nothing when all are present. Otherwise, as root, runs
# apt-get install (after apt-get update when the package lists lack a
# package), under a lock so that parallel runs do not collide. Without root
# it fails and prints the command. Prints nothing on stdout.
set -euo pipefail

OL_VERSION=10.11.0
OL_DIR="${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/openlayers/$OL_VERSION"

AXE_VERSION=4.14.1
AXE_DIR="${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/axe-core/$AXE_VERSION"

PMTILES_VERSION=4.5.0
PMTILES_DIR="${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools/pmtiles/$PMTILES_VERSION"

LOCK_FILE="${TILECACHE_BROWSER_INSTALL_LOCK:-/run/lock/tilecache-browser-install.lock}"

log() { printf 'browser: %s\n' "$*" >&2; }
die() {
  printf 'browser: error: %s\n' "$*" >&2
  exit 1
}

missing_packages() {
  [[ -x /usr/bin/chromium ]] || echo chromium
  command -v gdal_translate >/dev/null 2>&1 && command -v gdalinfo >/dev/null 2>&1 || echo gdal-bin
  command -v tmux >/dev/null 2>&1 || echo tmux
  /usr/bin/python3 -c 'import owslib.wmts' >/dev/null 2>&1 || echo python3-owslib
  command -v njs >/dev/null 2>&1 || echo njs # the engine CloudFront Functions' runtime is built on (internal/edgepath/runtimes_test.go)
}

# install_openlayers fetches the ol package with npm pack (one tarball, no
# dependencies: dist/ol.js is the self-contained full build) and keeps
# dist/ol.js and ol.css.
install_openlayers() {
  [[ -s "$OL_DIR/ol.js" && -s "$OL_DIR/ol.css" ]] && return 0
  command -v npm >/dev/null 2>&1 || die "npm is needed to fetch OpenLayers (ol@$OL_VERSION)"
  local tmp start=$SECONDS
  mkdir -p "$(dirname "$OL_DIR")"
  tmp="$(mktemp -d "$(dirname "$OL_DIR")/.ol.XXXXXX")"
  log "fetching OpenLayers $OL_VERSION with npm pack (once)"
  if ! (cd "$tmp" && npm pack --loglevel=error "ol@$OL_VERSION" >/dev/null && tar xzf "ol-$OL_VERSION.tgz" package/dist/ol.js package/ol.css); then
    rm -rf -- "$tmp"
    die "npm pack ol@$OL_VERSION failed"
  fi
  mkdir -p "$tmp/out" && mv "$tmp/package/dist/ol.js" "$tmp/package/ol.css" "$tmp/out/" && chmod 755 "$tmp/out"
  rm -rf -- "$OL_DIR" && mv "$tmp/out" "$OL_DIR" && rm -rf -- "$tmp"
  log "OpenLayers $OL_VERSION in $OL_DIR in $((SECONDS - start))s"
}
install_openlayers

# install_axe fetches axe-core with npm pack (one tarball; axe.min.js is
# self-contained) and keeps axe.min.js.
install_axe() {
  [[ -s "$AXE_DIR/axe.min.js" ]] && return 0
  command -v npm >/dev/null 2>&1 || die "npm is needed to fetch axe-core ($AXE_VERSION)"
  local tmp start=$SECONDS
  mkdir -p "$(dirname "$AXE_DIR")"
  tmp="$(mktemp -d "$(dirname "$AXE_DIR")/.axe.XXXXXX")"
  log "fetching axe-core $AXE_VERSION with npm pack (once)"
  if ! (cd "$tmp" && npm pack --loglevel=error "axe-core@$AXE_VERSION" >/dev/null && tar xzf "axe-core-$AXE_VERSION.tgz" package/axe.min.js); then
    rm -rf -- "$tmp"
    die "npm pack axe-core@$AXE_VERSION failed"
  fi
  mkdir -p "$tmp/out" && mv "$tmp/package/axe.min.js" "$tmp/out/" && chmod 755 "$tmp/out"
  rm -rf -- "$AXE_DIR" && mv "$tmp/out" "$AXE_DIR" && rm -rf -- "$tmp"
  log "axe-core $AXE_VERSION in $AXE_DIR in $((SECONDS - start))s"
}
install_axe

# install_pmtiles fetches the pmtiles package with npm pack (one tarball;
# dist/pmtiles.js is the self-contained browser build) and keeps it.
install_pmtiles() {
  [[ -s "$PMTILES_DIR/pmtiles.js" ]] && return 0
  command -v npm >/dev/null 2>&1 || die "npm is needed to fetch the pmtiles library ($PMTILES_VERSION)"
  local tmp start=$SECONDS
  mkdir -p "$(dirname "$PMTILES_DIR")"
  tmp="$(mktemp -d "$(dirname "$PMTILES_DIR")/.pmtiles.XXXXXX")"
  log "fetching pmtiles $PMTILES_VERSION with npm pack (once)"
  if ! (cd "$tmp" && npm pack --loglevel=error "pmtiles@$PMTILES_VERSION" >/dev/null && tar xzf "pmtiles-$PMTILES_VERSION.tgz" package/dist/pmtiles.js); then
    rm -rf -- "$tmp"
    die "npm pack pmtiles@$PMTILES_VERSION failed"
  fi
  mkdir -p "$tmp/out" && mv "$tmp/package/dist/pmtiles.js" "$tmp/out/" && chmod 755 "$tmp/out"
  rm -rf -- "$PMTILES_DIR" && mv "$tmp/out" "$PMTILES_DIR" && rm -rf -- "$tmp"
  log "pmtiles $PMTILES_VERSION in $PMTILES_DIR in $((SECONDS - start))s"
}
install_pmtiles

mapfile -t missing < <(missing_packages)
((${#missing[@]} == 0)) && exit 0
if [[ "$(id -u)" != 0 ]]; then
  die "missing Debian packages: ${missing[*]}; install them as root: apt-get install -y ${missing[*]}"
fi
exec 9>"$LOCK_FILE"
flock -w 1800 9 || die "another install holds $LOCK_FILE"
mapfile -t missing < <(missing_packages)
((${#missing[@]} == 0)) && exit 0
start=$SECONDS
log "installing ${missing[*]} (Debian packages, once)"
export DEBIAN_FRONTEND=noninteractive
aptlog="$(mktemp)"
trap 'rm -f "$aptlog"' EXIT
apt() { apt-get "$@" >>"$aptlog" 2>&1 || { cat "$aptlog" >&2; return 1; }; }
lists_ok=1
for p in "${missing[@]}"; do apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || lists_ok=0; done
if ((lists_ok == 0)); then apt update -qq || die "apt-get update failed"; fi
if ! apt install -y -qq --no-install-recommends "${missing[@]}"; then
  apt update -qq || die "apt-get update failed"
  apt install -y -qq --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
fi
mapfile -t still < <(missing_packages)
((${#still[@]} == 0)) || die "still missing after install: ${still[*]}"
log "installed ${missing[*]} in $((SECONDS - start))s"
