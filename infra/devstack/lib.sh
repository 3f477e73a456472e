# shellcheck shell=bash disable=SC2034 # variables used by the scripts that source this file
# Shared settings and helpers for infra/devstack/{install,up,down}.sh.
# Sourced, never executed. Every port and path can be overridden from the
# environment; see infra/devstack/README.md.

DEVSTACK_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEVSTACK_PROJECT_ROOT="$(cd "$DEVSTACK_LIB_DIR/../.." && pwd)"

# Pinned versions (verified in /work/shared/devstack/README.md).
MINIO_MODULE="github.com/minio/minio"
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
DDBLOCAL_NPM_PACKAGE="amplify-dynamodb-simulator"
DDBLOCAL_NPM_VERSION="2.9.30" # ships DynamoDB Local 1.25.1
FAUXQS_VERSION="1.9.2"        # 2.x needs node >= 22.5
# moto_server (moto 5.x, Python) serves CloudFront. It is not installed here
# (it comes with the Python package moto[server]): it must be on PATH, or
# named by TILECACHE_MOTO_SERVER.
MOTO_SERVER="${TILECACHE_MOTO_SERVER:-moto_server}"

# Paths.
CACHE_DIR="${TILECACHE_CACHE:-$HOME/.cache/tilecache}"
[[ "$CACHE_DIR" == /* ]] || CACHE_DIR="$PWD/$CACHE_DIR" # the scripts cd around
TOOLS_DIR="$CACHE_DIR/tools"
MINIO_BIN="$TOOLS_DIR/bin/minio"
DDBLOCAL_DIR="$TOOLS_DIR/ddblocal"
FAUXQS_DIR="$TOOLS_DIR/fauxqs"
FAUXQS_STARTER="$FAUXQS_DIR/tilecache-fauxqs-start.mjs"
STATE_DIR="${TILECACHE_DEVSTACK_DIR:-$DEVSTACK_PROJECT_ROOT/.devstack}"
[[ "$STATE_DIR" == /* ]] || STATE_DIR="$PWD/$STATE_DIR"

# Ports (all services listen on 127.0.0.1, except DynamoDB Local, which has no
# bind-address flag and listens on every interface).
S3_PORT="${TILECACHE_S3_PORT:-9310}"
S3_CONSOLE_PORT="${TILECACHE_S3_CONSOLE_PORT:-9311}"
DDB_PORT="${TILECACHE_DYNAMODB_PORT:-9320}"
SQS_PORT="${TILECACHE_SQS_PORT:-9330}"
CDN_PORT="${TILECACHE_CDN_PORT:-9345}"

# MinIO root credentials; exported as AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
# (DynamoDB Local, fauxqs and moto accept any credentials).
DEVSTACK_ACCESS_KEY="${TILECACHE_DEVSTACK_ACCESS_KEY:-tilecache}"
DEVSTACK_SECRET_KEY="${TILECACHE_DEVSTACK_SECRET_KEY:-tilecache-secret}"
DEVSTACK_REGION="us-east-1"

# Timeouts in seconds.
READY_TIMEOUT="${TILECACHE_DEVSTACK_READY_TIMEOUT:-60}"
STOP_TIMEOUT="${TILECACHE_DEVSTACK_STOP_TIMEOUT:-10}"

log() { printf 'devstack: %s\n' "$*" >&2; }
warn() { printf 'devstack: warning: %s\n' "$*" >&2; }
die() {
  printf 'devstack: error: %s\n' "$*" >&2
  exit 1
}

# check_port <value> <name>: fail unless value is a TCP port number.
check_port() {
  case "$1" in
    '' | *[!0-9]*) die "$2 must be a port number, got '$1'" ;;
  esac
  if (($1 < 1 || $1 > 65535)); then die "$2 must be a port number, got '$1'"; fi
}

# wait_lock <fd> <what>: take an exclusive flock on an already opened fd,
# telling the user when it has to wait.
wait_lock() {
  if ! flock -n "$1"; then
    log "waiting for another devstack run holding the $2 lock"
    flock -w 1800 "$1" || die "timed out waiting for the $2 lock"
  fi
}

# pid_alive <pid>: true while the process exists and is not a zombie. When
# the main thread of a multi-threaded process (java) exits first, its state
# reads Z while other threads still run and hold the ports: count those too.
pid_alive() {
  local state="" tasks=()
  [[ -n "$1" && "$1" != *[!0-9]* ]] || return 1
  [[ -r "/proc/$1/stat" ]] || return 1
  state="$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$state" ]] || return 1
  [[ "$state" != "Z" && "$state" != "X" ]] && return 0
  tasks=("/proc/$1/task/"*)
  ((${#tasks[@]} > 1))
}

# pid_cmdline <pid>: the process's argv joined by spaces.
pid_cmdline() {
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null
}

# service_marker <service>: a fixed string that the command line of a process
# this stack started contains; used to avoid signalling a recycled pid.
service_marker() {
  case "$1" in
    minio) printf '%s' "minio server" ;;
    dynamodb) printf '%s' "DynamoDBLocal.jar" ;;
    sqs) printf '%s' "tilecache-fauxqs-start.mjs" ;;
    cloudfront) printf '%s' "moto_server" ;;
    *) die "unknown service $1" ;;
  esac
}

# service_pid <service>: prints the pid recorded in the pid file when that
# process is alive and is one this stack started; fails otherwise.
service_pid() {
  local file="$STATE_DIR/$1.pid" pid=""
  [[ -f "$file" ]] || return 1
  read -r pid <"$file" || true
  pid_alive "$pid" || return 1
  [[ "$(pid_cmdline "$pid")" == *"$(service_marker "$1")"* ]] || return 1
  printf '%s\n' "$pid"
}

# service_port_ok <service> <pid>: true when the running process was started
# with the ports configured now (the pid file does not record them).
service_port_ok() {
  case "$1" in
    minio) [[ "$(pid_cmdline "$2")" == *"--address 127.0.0.1:$S3_PORT "* ]] ;;
    dynamodb) [[ "$(pid_cmdline "$2") " == *" -port $DDB_PORT "* ]] ;;
    sqs) tr '\0' '\n' <"/proc/$2/environ" 2>/dev/null | grep -qx "FAUXQS_PORT=$SQS_PORT" ;;
    cloudfront) [[ "$(pid_cmdline "$2")" == *" -H 127.0.0.1 -p $CDN_PORT "* ]] ;;
    *) return 1 ;;
  esac
}

SERVICES=(minio dynamodb sqs cloudfront)
