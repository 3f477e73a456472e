#!/usr/bin/env bash
# Installs what the test WMS (infra/wms) needs, from Debian packages:
#   cgi-mapserver      /usr/lib/cgi-bin/mapserv (MapServer 8, CGI/FastCGI)
#   mapserver-bin      shptree (spatial indexes for the shapefiles)
#   lighttpd           the web server that runs mapserv as FastCGI
#   gdal-bin           ogr2ogr, gdaldem, gdaladdo, gdalinfo (data generation)
#   fonts-dejavu-core  DejaVu Sans (labels)
#   curl               readiness checks
# Idempotent: does nothing when everything is present. Otherwise, as root,
# runs apt-get update (only when the package lists lack a package or an
# install fails on stale lists) and apt-get install, under a lock so that
# parallel runs do not collide. Without root it fails and prints the command.
#
# Installing lighttpd would start Debian's own lighttpd service on port 80
# (all interfaces). While this script installs, a temporary
# /usr/sbin/policy-rc.d (only if there is none) stops service starts; the
# service stays installed but stopped, and has nothing to do with the
# instance that up.sh runs (own configuration, 127.0.0.1 only).
# Prints nothing on stdout; progress and errors go to stderr.
set -euo pipefail

MAPSERV="/usr/lib/cgi-bin/mapserv"
FONT_DIR="/usr/share/fonts/truetype/dejavu"
LOCK_FILE="${TILECACHE_WMS_INSTALL_LOCK:-/run/lock/tilecache-wms-install.lock}"
LOCK_WAIT="${TILECACHE_WMS_INSTALL_WAIT:-1800}"
POLICY_RC="/usr/sbin/policy-rc.d"

log() { printf 'wms: %s\n' "$*" >&2; }
die() {
  printf 'wms: error: %s\n' "$*" >&2
  exit 1
}

# missing_packages: prints the Debian packages whose files are missing, one a line.
missing_packages() {
  [[ -x "$MAPSERV" ]] || echo cgi-mapserver
  command -v shptree >/dev/null 2>&1 || echo mapserver-bin
  command -v lighttpd >/dev/null 2>&1 || [[ -x /usr/sbin/lighttpd ]] || echo lighttpd
  local tool
  for tool in ogr2ogr gdaldem gdaladdo gdalinfo; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo gdal-bin
      break
    fi
  done
  [[ -r "$FONT_DIR/DejaVuSans.ttf" && -r "$FONT_DIR/DejaVuSans-Bold.ttf" ]] || echo fonts-dejavu-core
  command -v curl >/dev/null 2>&1 || echo curl
}

# lists_lack <packages...>: true when the package lists are empty or do not
# know one of the packages (then apt-get update is needed first).
lists_lack() {
  compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null || return 0
  local p
  for p in "$@"; do
    apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || return 0
  done
  return 1
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "$@" >&2
}

POLICY_CREATED=""
cleanup() {
  if [[ -n "$POLICY_CREATED" ]]; then rm -f -- "$POLICY_RC"; fi
}
trap cleanup EXIT

main() {
  local missing=() start=$SECONDS tool
  mapfile -t missing < <(missing_packages | sort -u)
  if ((${#missing[@]} == 0)); then
    log "MapServer, lighttpd, GDAL tools and fonts: already installed"
    return 0
  fi
  for tool in apt-get apt-cache flock; do
    command -v "$tool" >/dev/null 2>&1 ||
      die "missing packages: ${missing[*]}, and no $tool to install them: this expects Debian 12 (apt, util-linux)"
  done
  if ((EUID != 0)); then
    die "missing packages: ${missing[*]}; install them as root with:
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  fi

  mkdir -p -- "$(dirname "$LOCK_FILE")"
  exec 8>"$LOCK_FILE"
  if ! flock -n 8; then
    log "waiting for another install of the WMS packages (lock $LOCK_FILE)"
    flock -w "$LOCK_WAIT" 8 || die "timed out after ${LOCK_WAIT}s waiting for $LOCK_FILE"
  fi
  mapfile -t missing < <(missing_packages | sort -u) # the other run may have installed them
  if ((${#missing[@]} == 0)); then
    log "installed by another run meanwhile"
    return 0
  fi

  if [[ " ${missing[*]} " == *" lighttpd "* && ! -e "$POLICY_RC" ]]; then
    # Keep Debian's lighttpd service (port 80, all interfaces) from starting.
    printf '#!/bin/sh\n# temporary, by tilecache infra/wms/install.sh: no service starts\nexit 101\n' >"$POLICY_RC"
    chmod 755 "$POLICY_RC"
    POLICY_CREATED=1
  fi

  log "installing ${missing[*]} (apt-get)"
  local updated=""
  if lists_lack "${missing[@]}"; then
    log "apt-get update (the package lists lack some of them)"
    apt-get -o DPkg::Lock::Timeout=600 update >&2 || die "apt-get update failed"
    updated=1
  fi
  if ! apt_install "${missing[@]}"; then
    [[ -z "$updated" ]] || die "apt-get install ${missing[*]} failed (see above)"
    log "apt-get install failed; retrying after apt-get update (stale package lists?)"
    apt-get -o DPkg::Lock::Timeout=600 update >&2 || die "apt-get update failed"
    apt_install "${missing[@]}" || die "apt-get install ${missing[*]} failed (see above)"
  fi
  mapfile -t missing < <(missing_packages | sort -u)
  ((${#missing[@]} == 0)) || die "still missing after apt-get install: ${missing[*]}"
  if [[ -n "$POLICY_CREATED" ]]; then
    log "Debian's lighttpd service was installed but not started (our instance is separate); to keep it off at boot: systemctl disable lighttpd"
  fi
  log "installed in $((SECONDS - start))s"
}

main "$@"
