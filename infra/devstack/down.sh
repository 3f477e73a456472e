#!/usr/bin/env bash
# Stops the local AWS stack started by infra/devstack/up.sh: only the processes
# recorded in its pid files (TERM, then KILL after ${TILECACHE_DEVSTACK_STOP_TIMEOUT:-10}s),
# then removes the pid files, MinIO's tmpfs data directory and the record of
# the CloudFront distribution (moto_server keeps it only in memory). Logs are
# kept.
# Prints nothing on stdout.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# signal_stop <service>: send TERM to the service's recorded process when it
# is one this stack started; record it in STOPPING.
declare -A STOPPING=()
signal_stop() {
  local name="$1" pidfile="$STATE_DIR/$1.pid" recorded="" pid=""
  [[ -e "$pidfile" ]] || return 0
  read -r recorded <"$pidfile" || true
  if ! pid="$(service_pid "$name")"; then
    if pid_alive "$recorded"; then
      warn "$name: pid $recorded from $pidfile is not a process of this stack (any more); not touching it"
    else
      log "$name: not running"
    fi
    rm -f -- "$pidfile"
    return 0
  fi
  log "$name: stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  STOPPING[$name]="$pid"
}

# wait_stopped <service> <deadline>: wait for the process to exit, KILL it
# after the deadline (in $SECONDS), and remove the pid file.
wait_stopped() {
  local name="$1" deadline="$2" pid="${STOPPING[$1]}" i
  while pid_alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  if pid_alive "$pid"; then
    warn "$name: pid $pid still running after ${STOP_TIMEOUT}s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      pid_alive "$pid" || break
      sleep 0.1
    done
    if pid_alive "$pid"; then die "$name: pid $pid survived KILL"; fi
  fi
  log "$name: stopped"
  rm -f -- "$STATE_DIR/$name.pid"
}

remove_minio_data() {
  local file="$STATE_DIR/minio.datadir" dir=""
  [[ -e "$file" ]] || return 0
  read -r dir <"$file" || true
  # Only ever the tmpfs directory up.sh created, never anything else.
  case "$dir" in
    /dev/shm/tilecache-devstack-[0-9]*)
      if [[ -d "$dir" ]]; then
        rm -rf -- "$dir"
        log "minio: removed data directory $dir"
      fi
      ;;
    *) warn "minio: not removing unexpected data directory '$dir' named in $file" ;;
  esac
  rm -f -- "$file"
}

main() {
  local start=$SECONDS name
  if [[ ! -d "$STATE_DIR" ]]; then
    log "nothing to stop (no state directory $STATE_DIR)"
    return 0
  fi
  exec 9>"$STATE_DIR/.lock"
  wait_lock 9 "state dir ($STATE_DIR)"
  if ! compgen -G "$STATE_DIR/*.pid" >/dev/null; then log "nothing to stop (no pid files in $STATE_DIR)"; fi
  for name in "${SERVICES[@]}"; do signal_stop "$name"; done
  for name in "${SERVICES[@]}"; do
    if [[ -n "${STOPPING[$name]:-}" ]]; then wait_stopped "$name" $((start + STOP_TIMEOUT)); fi
  done
  # The data directory goes only when MinIO is gone.
  if ! service_pid minio >/dev/null; then remove_minio_data; fi
  if ! service_pid cloudfront >/dev/null; then rm -f -- "$STATE_DIR/cloudfront.distribution"; fi
  log "stopped in $((SECONDS - start))s (logs kept in $STATE_DIR)"
}

main "$@"
