#!/usr/bin/env bash
# Starts the local AWS stack (MinIO for S3, DynamoDB Local, fauxqs for SQS,
# moto_server for CloudFront), provisions the bucket, table, queues and
# distribution, and prints `export NAME=value` lines for the application:
#   eval "$(infra/devstack/up.sh)"
# Idempotent: services of this stack that are already running are reused.
# Only the export lines go to stdout; everything else goes to stderr.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROVISION_SCRIPT="$DEVSTACK_PROJECT_ROOT/localstack/init/ready.d/10-tilecache.sh"
S3_BUCKET="${TILECACHE_S3_BUCKET:-tilecache-tiles}"
DDB_TABLE="${TILECACHE_DYNAMODB_TABLE:-tilecache}"
SQS_QUEUE="${TILECACHE_SQS_QUEUE:-tilecache-lanes}"
DDB_HEAP="${TILECACHE_DYNAMODB_HEAP:-512m}"
# MinIO data: $TILECACHE_MINIO_DATA if set, else tmpfs (removed by down.sh),
# else $STATE_DIR/minio-data.
MINIO_TMPFS_DATA="/dev/shm/tilecache-devstack-$S3_PORT"

S3_URL="http://127.0.0.1:$S3_PORT"
DDB_URL="http://127.0.0.1:$DDB_PORT"
SQS_URL="http://127.0.0.1:$SQS_PORT"
CDN_URL="http://127.0.0.1:$CDN_PORT"
# The id of the distribution created in moto_server (whose state lives only
# in its memory); removed by down.sh.
CDN_DISTRIBUTION_FILE="$STATE_DIR/cloudfront.distribution"

# port_env <service>: the variable that sets the service's port.
port_env() {
  case "$1" in
    minio) printf 'TILECACHE_S3_PORT=%s' "$S3_PORT" ;;
    dynamodb) printf 'TILECACHE_DYNAMODB_PORT=%s' "$DDB_PORT" ;;
    sqs) printf 'TILECACHE_SQS_PORT=%s' "$SQS_PORT" ;;
    cloudfront) printf 'TILECACHE_CDN_PORT=%s' "$CDN_PORT" ;;
  esac
}

# port_in_use <port>: something accepts connections on 127.0.0.1:<port>.
port_in_use() {
  # shellcheck disable=SC2016 # $1 belongs to the inner shell
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# probe <service>: the service answers.
probe() {
  local code
  case "$1" in
    minio)
      curl -sf --noproxy '*' -m 2 -o /dev/null "$S3_URL/minio/health/ready"
      ;;
    dynamodb)
      # Any HTTP answer will do (GET / gives a 400 with a JSON error).
      code="$(curl -s --noproxy '*' -m 2 -o /dev/null -w '%{http_code}' "$DDB_URL/" || true)"
      [[ -n "$code" && "$code" != "000" ]]
      ;;
    sqs)
      curl -sf --noproxy '*' -m 2 -o /dev/null "$SQS_URL/health"
      ;;
    cloudfront)
      # moto's own API; answers 200 once the server is up.
      curl -sf --noproxy '*' -m 2 -o /dev/null "$CDN_URL/moto-api/"
      ;;
  esac
}

log_tail() {
  local file="$STATE_DIR/$1.log"
  if [[ -s "$file" ]]; then
    printf 'devstack: last lines of %s:\n' "$file" >&2
    tail -n 25 -- "$file" | sed 's/^/    /' >&2
  fi
}

# launch <service> <workdir> <command...>: start the command detached (own
# session, stdin from /dev/null, output to <service>.log with the previous
# log kept as <service>.log.1); the process writes its own pid into
# <service>.pid right before exec.
launch() {
  local name="$1" workdir="$2"
  shift 2
  local pidfile="$STATE_DIR/$name.pid" logfile="$STATE_DIR/$name.log" i
  rm -f -- "$pidfile"
  if [[ -e "$logfile" ]]; then mv -f -- "$logfile" "$logfile.1"; fi # keep one previous log
  printf '=== %s: starting %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$*" >"$logfile"
  (
    cd "$workdir"
    # The inner shell closes every inherited descriptor above 2 (lock files,
    # pipes of make or of a caller's $(...)), writes its pid, then execs.
    # shellcheck disable=SC2016 # $$, $1 and $fd belong to the inner shell
    exec setsid bash -c '
      for fd in /proc/self/fd/*; do fd=${fd##*/}; if ((fd > 2)); then eval "exec $fd>&-"; fi; done
      printf "%s\n" "$$" >"$1.tmp" && mv -f -- "$1.tmp" "$1" && shift && exec "$@"' \
      devstack-launch "$pidfile" "$@"
  ) </dev/null >>"$logfile" 2>&1 9>&- &
  for ((i = 0; i < 100; i++)); do
    [[ -s "$pidfile" ]] && return 0
    sleep 0.1
  done
  log_tail "$name"
  die "$name did not start (no pid file after 10s)"
}

start_minio() {
  local data="${TILECACHE_MINIO_DATA:-}"
  if [[ -n "$data" && "$data" != /* ]]; then data="$PWD/$data"; fi
  if [[ -z "$data" ]]; then
    if [[ -d /dev/shm && -w /dev/shm ]]; then
      data="$MINIO_TMPFS_DATA"
      # Recorded so that down.sh removes exactly this directory.
      printf '%s\n' "$data" >"$STATE_DIR/minio.datadir"
    else
      data="$STATE_DIR/minio-data"
    fi
  fi
  mkdir -p -- "$data"
  log "minio: starting on $S3_URL (console 127.0.0.1:$S3_CONSOLE_PORT, data in $data)"
  # The data scanner (usage statistics, lifecycle rules: nothing tilecache
  # reads) at its slowest: with 20,000 objects stored it took 3.3, 7.1, 1.2
  # and 1.1 s of CPU in the four idle minutes that followed at its default
  # speed, 0.2 s in all at the slowest.
  MINIO_ROOT_USER="$DEVSTACK_ACCESS_KEY" MINIO_ROOT_PASSWORD="$DEVSTACK_SECRET_KEY" \
    MINIO_BROWSER=off MINIO_UPDATE=off MINIO_SCANNER_SPEED=slowest \
    launch minio "$STATE_DIR" "$MINIO_BIN" server "$data" \
    --address "127.0.0.1:$S3_PORT" --console-address "127.0.0.1:$S3_CONSOLE_PORT"
}

start_dynamodb() {
  local workdir="$STATE_DIR/dynamodb"
  mkdir -p -- "$workdir" # DynamoDB Local writes dynamodb-local-metadata.json into its cwd
  log "dynamodb: starting DynamoDB Local on $DDB_URL (in memory)"
  # The client compiler only and the serial collector: on the 2 cores a
  # test run shares, the optimising compiler's and G1's own threads cost
  # more than they give back. Measured on the dynamo adapter and REST
  # suites (the same requests): 50 s of the JVM's CPU instead of 70 s.
  DDB_LOCAL_TELEMETRY=0 launch dynamodb "$workdir" java "-Xmx$DDB_HEAP" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    "-Djava.library.path=$DDBLOCAL_DIR/DynamoDBLocal_lib" -jar "$DDBLOCAL_DIR/DynamoDBLocal.jar" \
    -inMemory -sharedDb -disableTelemetry -port "$DDB_PORT"
}

start_sqs() {
  log "sqs: starting fauxqs on $SQS_URL (in memory)"
  FAUXQS_BIND_HOST=127.0.0.1 FAUXQS_PORT="$SQS_PORT" FAUXQS_DEFAULT_REGION="$DEVSTACK_REGION" \
    launch sqs "$FAUXQS_DIR" node "$FAUXQS_STARTER"
}

start_cloudfront() {
  log "cloudfront: starting moto_server on $CDN_URL (in memory)"
  launch cloudfront "$STATE_DIR" "$MOTO_SERVER" -H 127.0.0.1 -p "$CDN_PORT"
}

# check <service>: decide whether the service must be started. Reuses a
# running instance of this stack; otherwise checks that its ports are free.
# Fills TO_START and STARTED (services this run has to wait for).
declare -A STARTED=()
TO_START=()
check() {
  local name="$1" pid
  if pid="$(service_pid "$name")"; then
    service_port_ok "$name" "$pid" ||
      die "$name (pid $pid, started by this stack) runs with other ports than $(port_env "$name"); stop it with infra/devstack/down.sh first"
    if probe "$name"; then
      log "$name: already running (pid $pid), reusing it"
    else
      log "$name: pid $pid is running but does not answer yet; waiting for it"
      STARTED[$name]=1
    fi
    return
  fi
  if [[ -e "$STATE_DIR/$name.pid" ]]; then
    log "$name: removing stale pid file"
    rm -f -- "$STATE_DIR/$name.pid"
  fi
  if port_in_use "${PORT_OF[$name]}"; then
    die "$name: port ${PORT_OF[$name]} is already in use by a process this stack did not start; free it or choose another port ($(port_env "$name"))"
  fi
  if [[ "$name" == minio ]] && port_in_use "$S3_CONSOLE_PORT"; then
    die "minio: console port $S3_CONSOLE_PORT is already in use; free it or choose another (TILECACHE_S3_CONSOLE_PORT)"
  fi
  TO_START+=("$name")
}

# wait_ready <service>: poll until it answers, failing early if it exits.
wait_ready() {
  local name="$1" pid deadline=$((SECONDS + READY_TIMEOUT)) start=$SECONDS
  read -r pid <"$STATE_DIR/$name.pid"
  until probe "$name"; do
    if ! pid_alive "$pid"; then
      log_tail "$name"
      die "$name exited during startup (pid $pid); full log: $STATE_DIR/$name.log"
    fi
    if ((SECONDS >= deadline)); then
      log_tail "$name"
      die "$name (pid $pid) not ready after ${READY_TIMEOUT}s (TILECACHE_DEVSTACK_READY_TIMEOUT); log: $STATE_DIR/$name.log; stop with infra/devstack/down.sh"
    fi
    sleep 0.2
  done
  log "$name: ready after $((SECONDS - start))s (pid $pid)"
}

# devstack_env <command...>: run with the stack's credentials and region, and
# without settings of the caller's real AWS account that would get in the way.
devstack_env() {
  env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u AWS_SECURITY_TOKEN -u AWS_ENDPOINT_URL \
    AWS_ACCESS_KEY_ID="$DEVSTACK_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$DEVSTACK_SECRET_KEY" \
    AWS_REGION="$DEVSTACK_REGION" AWS_DEFAULT_REGION="$DEVSTACK_REGION" AWS_PAGER="" \
    NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}" \
    "$@"
}

# signed <service> <curl args...>: a SigV4-signed request with the stack's
# credentials (curl >= 7.75). Much faster than the aws CLI (~1 s a call).
signed() {
  local service="$1"
  shift
  curl -s --noproxy '*' -m 5 --aws-sigv4 "aws:amz:$DEVSTACK_REGION:$service" \
    -u "$DEVSTACK_ACCESS_KEY:$DEVSTACK_SECRET_KEY" "$@"
}

# json_call <base url> <service> <X-Amz-Target> <JSON body>: AWS JSON 1.0 call.
json_call() {
  signed "$2" -f -H 'Content-Type: application/x-amz-json-1.0' -H "X-Amz-Target: $3" -d "$4" "$1/"
}

curl_has_sigv4() { curl --help all 2>/dev/null | grep -q -- '--aws-sigv4'; }

# curl_queue_url: print the queue URL as the server returns it.
curl_queue_url() {
  local out url
  out="$(json_call "$SQS_URL" sqs AmazonSQS.GetQueueUrl "{\"QueueName\":\"$SQS_QUEUE\"}")" || return 1
  url="$(printf '%s' "$out" | sed -n 's/.*"QueueUrl":"\([^"]*\)".*/\1/p')"
  [[ -n "$url" ]] || return 1
  printf '%s\n' "$url"
}

# already_provisioned: the bucket, the ACTIVE table with index "active" and
# TTL, and the queue with its redrive policy all exist. A quick check with
# signed curl requests; when anything is missing the provisioning script runs.
already_provisioned() {
  local out url
  curl_has_sigv4 || return 1
  [[ "$(signed s3 -o /dev/null -w '%{http_code}' -I "$S3_URL/$S3_BUCKET")" == 200 ]] || return 1
  out="$(json_call "$DDB_URL" dynamodb DynamoDB_20120810.DescribeTable "{\"TableName\":\"$DDB_TABLE\"}")" || return 1
  [[ "$out" == *'"TableStatus":"ACTIVE"'* && "$out" == *'"IndexName":"active"'* ]] || return 1
  out="$(json_call "$DDB_URL" dynamodb DynamoDB_20120810.DescribeTimeToLive "{\"TableName\":\"$DDB_TABLE\"}")" || return 1
  [[ "$out" == *'"TimeToLiveStatus":"ENABLED"'* ]] || return 1
  url="$(curl_queue_url)" || return 1
  out="$(json_call "$SQS_URL" sqs AmazonSQS.GetQueueAttributes \
    "{\"QueueUrl\":\"$url\",\"AttributeNames\":[\"RedrivePolicy\"]}")" || return 1
  [[ "$out" == *":$SQS_QUEUE-dlq"* ]] || return 1
}

# distribution_exists <id>: moto_server knows the distribution.
distribution_exists() {
  if curl_has_sigv4; then
    [[ "$(signed cloudfront -o /dev/null -w '%{http_code}' "$CDN_URL/2020-05-31/distribution/$1")" == 200 ]]
  else
    devstack_env aws --endpoint-url "$CDN_URL" cloudfront get-distribution --id "$1" >/dev/null 2>&1
  fi
}

# ensure_distribution: reuse the distribution recorded in the state dir when
# moto_server still has it, else create one. Sets CDN_DISTRIBUTION_ID.
CDN_DISTRIBUTION_ID=""
ensure_distribution() {
  local id="" config
  if [[ -s "$CDN_DISTRIBUTION_FILE" ]]; then read -r id <"$CDN_DISTRIBUTION_FILE" || true; fi
  if [[ -n "$id" && "$id" != *[!A-Za-z0-9]* ]] && distribution_exists "$id"; then
    log "distribution $id already provisioned"
    CDN_DISTRIBUTION_ID="$id"
    return
  fi
  # The origin stands for the bucket in MinIO; moto never fetches from it.
  config="$(printf '{"CallerReference":"tilecache-devstack-%s-%s","Comment":"tilecache devstack","Enabled":true,
    "Origins":{"Quantity":1,"Items":[{"Id":"tiles","DomainName":"127.0.0.1","OriginPath":"/%s",
      "CustomOriginConfig":{"HTTPPort":%s,"HTTPSPort":443,"OriginProtocolPolicy":"http-only"}}]},
    "DefaultCacheBehavior":{"TargetOriginId":"tiles","ViewerProtocolPolicy":"allow-all",
      "CachePolicyId":"658327ea-f89d-4fab-a63d-7e88639e58f6"}}' "$(date +%s)" "$$" "$S3_BUCKET" "$S3_PORT")"
  id="$(devstack_env aws --endpoint-url "$CDN_URL" --region "$DEVSTACK_REGION" cloudfront create-distribution \
    --distribution-config "$config" --query Distribution.Id --output text)" ||
    die "cannot create a CloudFront distribution in moto_server (log: $STATE_DIR/cloudfront.log)"
  [[ -n "$id" && "$id" != None && "$id" != *[!A-Za-z0-9]* ]] || die "moto_server answered an unexpected distribution id '$id'"
  printf '%s\n' "$id" >"$CDN_DISTRIBUTION_FILE"
  log "distribution $id created"
  CDN_DISTRIBUTION_ID="$id"
}

main() {
  local start=$SECONDS name queue_url
  for name in S3_PORT S3_CONSOLE_PORT DDB_PORT SQS_PORT CDN_PORT; do check_port "${!name}" "$name"; done
  ((${#DEVSTACK_ACCESS_KEY} >= 3)) || die "TILECACHE_DEVSTACK_ACCESS_KEY needs at least 3 characters (MinIO)"
  ((${#DEVSTACK_SECRET_KEY} >= 8)) || die "TILECACHE_DEVSTACK_SECRET_KEY needs at least 8 characters (MinIO)"
  [[ -f "$PROVISION_SCRIPT" ]] || die "provisioning script not found: $PROVISION_SCRIPT"
  declare -gA PORT_OF=([minio]="$S3_PORT" [dynamodb]="$DDB_PORT" [sqs]="$SQS_PORT" [cloudfront]="$CDN_PORT")
  command -v "$MOTO_SERVER" >/dev/null 2>&1 ||
    die "moto_server not found ('$MOTO_SERVER'): the stack's CloudFront is moto's server mode (Python package moto[server], 5.x), which this script cannot install; put moto_server on PATH or set TILECACHE_MOTO_SERVER to it"

  bash "$DEVSTACK_LIB_DIR/install.sh" >&2

  mkdir -p -- "$STATE_DIR"
  [[ -e "$STATE_DIR/.gitignore" ]] || printf '# created by infra/devstack/up.sh\n*\n' >"$STATE_DIR/.gitignore"
  exec 9>"$STATE_DIR/.lock"
  wait_lock 9 "state dir ($STATE_DIR)"

  # Check everything before starting anything.
  for name in "${SERVICES[@]}"; do check "$name"; done
  for name in "${TO_START[@]}"; do
    "start_$name"
    STARTED[$name]=1
  done
  for name in "${SERVICES[@]}"; do
    if [[ -n "${STARTED[$name]:-}" ]]; then wait_ready "$name"; fi
  done

  if already_provisioned; then
    log "bucket $S3_BUCKET, table $DDB_TABLE and queue $SQS_QUEUE already provisioned"
  else
    log "provisioning bucket $S3_BUCKET, table $DDB_TABLE and queue $SQS_QUEUE"
    devstack_env AWS_ENDPOINT_URL_S3="$S3_URL" AWS_ENDPOINT_URL_DYNAMODB="$DDB_URL" AWS_ENDPOINT_URL_SQS="$SQS_URL" \
      TILECACHE_S3_BUCKET="$S3_BUCKET" TILECACHE_DYNAMODB_TABLE="$DDB_TABLE" TILECACHE_SQS_QUEUE="$SQS_QUEUE" \
      bash "$PROVISION_SCRIPT" >&2 ||
      die "provisioning failed (see above); service logs are in $STATE_DIR. Services reused from an earlier run keep the credentials they were started with: infra/devstack/down.sh resets them"
  fi

  ensure_distribution

  if ! queue_url="$(curl_queue_url)"; then
    queue_url="$(devstack_env aws --endpoint-url "$SQS_URL" --region "$DEVSTACK_REGION" \
      sqs get-queue-url --queue-name "$SQS_QUEUE" --query QueueUrl --output text)" ||
      die "cannot get the URL of queue $SQS_QUEUE"
  fi
  [[ -n "$queue_url" && "$queue_url" != None ]] || die "empty URL for queue $SQS_QUEUE"

  log "ready in $((SECONDS - start))s: S3 $S3_URL, DynamoDB $DDB_URL, SQS $SQS_URL, CloudFront $CDN_URL; state in $STATE_DIR; stop with infra/devstack/down.sh"
  emit AWS_ENDPOINT_URL_S3 "$S3_URL"
  emit AWS_ENDPOINT_URL_DYNAMODB "$DDB_URL"
  emit AWS_ENDPOINT_URL_SQS "$SQS_URL"
  emit AWS_ENDPOINT_URL_CLOUDFRONT "$CDN_URL"
  emit AWS_ACCESS_KEY_ID "$DEVSTACK_ACCESS_KEY"
  emit AWS_SECRET_ACCESS_KEY "$DEVSTACK_SECRET_KEY"
  emit AWS_REGION "$DEVSTACK_REGION"
  emit AWS_DEFAULT_REGION "$DEVSTACK_REGION" # the aws CLI v1 reads only this one
  emit TILECACHE_BACKEND aws
  emit TILECACHE_S3_BUCKET "$S3_BUCKET"
  emit TILECACHE_DYNAMODB_TABLE "$DDB_TABLE"
  emit TILECACHE_SQS_QUEUE_URL "$queue_url"
  emit TILECACHE_CDN_DISTRIBUTION_ID "$CDN_DISTRIBUTION_ID"
}

emit() { printf 'export %s=%q\n' "$1" "$2"; }

main "$@"
