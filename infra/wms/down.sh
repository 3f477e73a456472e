#!/usr/bin/env bash
# Stops the test WMS started by infra/wms/up.sh for the state directory
# ${TILECACHE_WMS_DIR:-<project>/.devstack/wms}: the lighttpd recorded in
# lighttpd.pid (only if its command line is still that lighttpd's), TERM then
# KILL after ${TILECACHE_WMS_STOP_TIMEOUT:-10}s, and then the mapserv FastCGI
# workers of this state directory (found by the MAPSERVER_CONFIG_FILE in their
# environment), TERM then KILL after 1s: lighttpd 1.4.69 does not reliably
# stop them when it exits (they stay behind as orphans), and an idle worker
# that has served a request ignores TERM until its next request. Safe to
# call when nothing runs.
# Logs and the configuration files stay. Prints nothing on stdout.
set -euo pipefail

WMS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT_ROOT="$(cd "$WMS_DIR/../.." && pwd)"
STATE_DIR="${TILECACHE_WMS_DIR:-$PROJECT_ROOT/.devstack/wms}"
[[ "$STATE_DIR" == /* ]] || STATE_DIR="$PWD/$STATE_DIR"
STOP_TIMEOUT="${TILECACHE_WMS_STOP_TIMEOUT:-10}"
MAPSERV="/usr/lib/cgi-bin/mapserv"

log() { printf 'wms: %s\n' "$*" >&2; }
warn() { printf 'wms: warning: %s\n' "$*" >&2; }
die() {
  printf 'wms: error: %s\n' "$*" >&2
  exit 1
}

alive() {
  [[ -r "/proc/$1/stat" ]] && [[ "$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$1/stat" 2>/dev/null)" != [ZX] ]]
}

# is_our_lighttpd <pid>: the lighttpd that up.sh started for this state dir.
is_our_lighttpd() {
  [[ -n "$1" && "$1" != *[!0-9]* ]] && alive "$1" &&
    [[ "$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)" == *"lighttpd -D -f $STATE_DIR/lighttpd.conf"* ]]
}

# our_workers: pids of the mapserv processes of this state directory.
our_workers() {
  local p pid exe
  exe="$(readlink -f -- "$MAPSERV")" # a symlink to /usr/bin/mapserv on Debian
  for p in /proc/[0-9]*; do
    pid="${p#/proc/}"
    [[ "$(readlink "$p/exe" 2>/dev/null)" == "$exe" ]] || continue
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qxF "MAPSERVER_CONFIG_FILE=$STATE_DIR/mapserver.conf" || continue
    alive "$pid" && printf '%s\n' "$pid"
  done
  return 0
}

# wait_gone <seconds> <pids...>: true when all exited within the time.
wait_gone() {
  local deadline=$((SECONDS + $1)) p left
  shift
  while :; do
    left=0
    for p in "$@"; do if alive "$p"; then left=1; fi; done
    ((left)) || return 0
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

main() {
  local start=$SECONDS pid="" workers=() p
  case "$STOP_TIMEOUT" in '' | *[!0-9]*) die "TILECACHE_WMS_STOP_TIMEOUT must be seconds, got '$STOP_TIMEOUT'" ;; esac
  if [[ ! -d "$STATE_DIR" ]]; then
    log "nothing to stop (no state directory $STATE_DIR)"
    return 0
  fi
  # up.sh runs this under its own lock before it starts lighttpd.
  if [[ "${TILECACHE_WMS_LOCK_HELD:-}" != 1 ]]; then
    exec 9>"$STATE_DIR/.lock"
    if ! flock -n 9; then
      log "waiting for another run holding the state dir lock ($STATE_DIR)"
      flock -w 120 9 || die "timed out waiting for the lock of $STATE_DIR"
    fi
  fi

  if [[ -f "$STATE_DIR/lighttpd.pid" ]]; then
    read -r pid <"$STATE_DIR/lighttpd.pid" || true
    if is_our_lighttpd "$pid"; then
      log "stopping lighttpd pid $pid"
      kill -TERM "$pid" 2>/dev/null || true
      if ! wait_gone "$STOP_TIMEOUT" "$pid"; then
        warn "lighttpd pid $pid still running after ${STOP_TIMEOUT}s; sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone 5 "$pid" || die "lighttpd pid $pid survived KILL"
      fi
    elif [[ -n "$pid" ]] && alive "$pid"; then
      warn "pid $pid from $STATE_DIR/lighttpd.pid is not this WMS's lighttpd (any more); not touching it"
    else
      log "lighttpd: not running"
    fi
    rm -f -- "$STATE_DIR/lighttpd.pid"
  else
    log "lighttpd: not running (no pid file)"
  fi

  # Then the workers (also orphans of a lighttpd that was killed or crashed).
  # A mapserv FastCGI worker that has served a request catches TERM and only
  # exits after its next request, so idle ones get KILL after a short grace.
  mapfile -t workers < <(our_workers)
  if ((${#workers[@]} > 0)); then
    log "stopping ${#workers[@]} mapserv workers: ${workers[*]}"
    for p in "${workers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    if ! wait_gone 1 "${workers[@]}"; then
      for p in "${workers[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
      wait_gone 5 "${workers[@]}" || die "mapserv workers survived KILL: ${workers[*]}"
    fi
  fi
  rm -f -- "$STATE_DIR"/mapserv.sock-*
  log "stopped in $((SECONDS - start))s (logs kept in $STATE_DIR)"
}

main "$@"
