#!/usr/bin/env bash
# Installs njs, the JavaScript engine CloudFront Functions' runtime
# (cloudfront-js-2.0) is built on, from Debian's package:
#   njs   /usr/bin/njs, the command-line engine that the edge functions'
#         tests run functions/edge/*.js under, beside node
#         (internal/edgepath/njs_test.go, internal/tiletoken/njs_test.go)
# Idempotent: does nothing when njs is present. Otherwise, as root, runs
# apt-get update (only when the package lists lack the package or an
# install fails on stale lists) and apt-get install, under a lock so that
# parallel runs do not collide. Without root it fails and prints the command.
# Prints nothing on stdout; progress and errors go to stderr.
set -euo pipefail

LOCK_FILE="${TILECACHE_NJS_INSTALL_LOCK:-/run/lock/tilecache-njs-install.lock}"
LOCK_WAIT="${TILECACHE_NJS_INSTALL_WAIT:-1800}"

log() { printf 'njs: %s\n' "$*" >&2; }
die() {
  printf 'njs: error: %s\n' "$*" >&2
  exit 1
}

# missing_packages: prints the Debian packages whose files are missing, one a line.
missing_packages() {
  command -v njs >/dev/null 2>&1 || echo njs
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

main() {
  local missing=() start=$SECONDS tool
  mapfile -t missing < <(missing_packages)
  if ((${#missing[@]} == 0)); then
    log "already installed ($(njs -v 2>/dev/null || echo 'version unknown'))"
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
    log "waiting for another install of njs (lock $LOCK_FILE)"
    flock -w "$LOCK_WAIT" 8 || die "timed out after ${LOCK_WAIT}s waiting for $LOCK_FILE"
  fi
  mapfile -t missing < <(missing_packages) # the other run may have installed it
  if ((${#missing[@]} == 0)); then
    log "installed by another run meanwhile"
    return 0
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
  mapfile -t missing < <(missing_packages)
  ((${#missing[@]} == 0)) || die "still missing after apt-get install: ${missing[*]}"
  log "installed $(njs -v 2>/dev/null || true) in $((SECONDS - start))s"
}

main "$@"
