#!/usr/bin/env bash
# Provisions tilecache's AWS resources. Idempotent: existing resources are kept.
#   S3 bucket        ${TILECACHE_S3_BUCKET:-tilecache-tiles}
#   DynamoDB table   ${TILECACHE_DYNAMODB_TABLE:-tilecache}: pk (S) / sk (S),
#                    GSI "active" gsi1pk (S) / gsi1sk (N), projection INCLUDE of the
#                    task status attributes (ALL accepted: a table made before),
#                    GSIs "lru" pk / lru (S) and "lfu" pk / lfu (S), projection ALL
#                    (an existing table without them is kept: the quota clean-up
#                    then reads and sorts every page),
#                    PAY_PER_REQUEST, TTL on attribute "expires"
#   SQS queue        ${TILECACHE_SQS_QUEUE:-tilecache-lanes}, visibility timeout 120 s,
#                    redrive to <queue>-dlq after 5 receives
# Used by infra/devstack/up.sh and as a LocalStack init hook (mount this
# directory at /etc/localstack/init/ready.d). Which CLI, per service:
#   AWS_ENDPOINT_URL_S3 / _DYNAMODB / _SQS set  ->  aws --endpoint-url <it>
#   else awslocal if present (LocalStack)       ->  awslocal
#   else                                        ->  aws (real AWS: mind the account!)
# Region: AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
# Progress and errors go to stderr; nothing is printed on stdout.
set -euo pipefail

BUCKET="${TILECACHE_S3_BUCKET:-tilecache-tiles}"
TABLE="${TILECACHE_DYNAMODB_TABLE:-tilecache}"
QUEUE="${TILECACHE_SQS_QUEUE:-tilecache-lanes}"
DLQ="$QUEUE-dlq"
VISIBILITY_TIMEOUT="${TILECACHE_SQS_VISIBILITY_TIMEOUT:-120}"
MAX_RECEIVE_COUNT="${TILECACHE_SQS_MAX_RECEIVE_COUNT:-5}"
DLQ_RETENTION=1209600 # 14 days, the maximum: keep dead letters as long as possible
REGION="${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"
TABLE_TIMEOUT="${TILECACHE_PROVISION_TIMEOUT:-120}" # seconds to wait for ACTIVE
export AWS_PAGER=""                                 # aws CLI v2 (awslocal may wrap it)

say() { printf '10-tilecache: %s\n' "$*" >&2; }
die() {
  printf '10-tilecache: error: %s\n' "$*" >&2
  exit 1
}

# cli <s3|dynamodb|sqs> <operation> <args...>: the right CLI for the service.
cli() {
  local service="$1" endpoint="" api="$1"
  shift
  case "$service" in
    s3) endpoint="${AWS_ENDPOINT_URL_S3:-}" api=s3api ;;
    dynamodb) endpoint="${AWS_ENDPOINT_URL_DYNAMODB:-}" ;;
    sqs) endpoint="${AWS_ENDPOINT_URL_SQS:-}" ;;
  esac
  if [[ -n "$endpoint" ]]; then
    aws --endpoint-url "$endpoint" --region "$REGION" "$api" "$@"
  elif command -v awslocal >/dev/null 2>&1; then
    awslocal --region "$REGION" "$api" "$@"
  else
    aws --region "$REGION" "$api" "$@"
  fi
}

describe_cli() {
  local service="$1" var="$2"
  if [[ -n "${!var:-}" ]]; then
    say "$service: aws --endpoint-url ${!var}"
  elif command -v awslocal >/dev/null 2>&1; then
    say "$service: awslocal"
  else
    say "$service: aws (no $var set: real AWS, region $REGION)"
  fi
}

ERR_DIR="$(mktemp -d)"
trap 'rm -rf -- "$ERR_DIR"' EXIT
ERR_FILE="$ERR_DIR/main" # each parallel part sets its own
OUT=""
ERR=""
# call <service> <args...>: run cli; its stdout goes to OUT, stderr to ERR.
call() {
  local rc=0
  OUT="$(cli "$@" 2>"$ERR_FILE")" || rc=$?
  ERR="$(cat -- "$ERR_FILE")"
  return "$rc"
}

ensure_bucket() {
  local args=(create-bucket --bucket "$BUCKET")
  if call s3 head-bucket --bucket "$BUCKET"; then
    say "bucket $BUCKET: exists"
    return
  fi
  case "$ERR" in
    *"(404)"* | *NotFound* | *NoSuchBucket*) ;;
    *) die "bucket $BUCKET: head-bucket failed: $ERR" ;;
  esac
  if [[ "$REGION" != us-east-1 ]]; then
    args+=(--create-bucket-configuration "LocationConstraint=$REGION")
  fi
  if call s3 "${args[@]}"; then
    say "bucket $BUCKET: created"
  elif [[ "$ERR" == *BucketAlreadyOwnedByYou* ]]; then
    say "bucket $BUCKET: exists"
  else
    die "bucket $BUCKET: create-bucket failed: $ERR"
  fi
}

# The table fields checked, as one line of text output:
# "<status> <indexes not ACTIVE> <pk> <sk> <index pk> <index sk> <index sk type> <projection>"
TABLE_FIELDS="[
  TableStatus,
  length(GlobalSecondaryIndexes[?IndexStatus!='ACTIVE'] || \`[]\`),
  KeySchema[?KeyType=='HASH'] | [0].AttributeName,
  KeySchema[?KeyType=='RANGE'] | [0].AttributeName,
  GlobalSecondaryIndexes[?IndexName=='active'] | [0].KeySchema[?KeyType=='HASH'] | [0].AttributeName,
  GlobalSecondaryIndexes[?IndexName=='active'] | [0].KeySchema[?KeyType=='RANGE'] | [0].AttributeName,
  AttributeDefinitions[?AttributeName=='gsi1sk'] | [0].AttributeType,
  GlobalSecondaryIndexes[?IndexName=='active'] | [0].Projection.ProjectionType]"

describe_table() {
  call dynamodb describe-table --table-name "$TABLE" --output text --query "Table.$TABLE_FIELDS"
}

# create_table: OUT as for describe_table; true when this call created it.
create_table() {
  if call dynamodb create-table --table-name "$TABLE" \
    --attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
    AttributeName=gsi1pk,AttributeType=S AttributeName=gsi1sk,AttributeType=N \
    AttributeName=lru,AttributeType=S AttributeName=lfu,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
    --global-secondary-indexes '[{"IndexName":"active","KeySchema":[{"AttributeName":"gsi1pk","KeyType":"HASH"},{"AttributeName":"gsi1sk","KeyType":"RANGE"}],"Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["id","job","layer","type","status","cursor","total","done","hb","finished","killed","staged","created"]}},{"IndexName":"lru","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"lru","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}},{"IndexName":"lfu","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"lfu","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}]' \
    --billing-mode PAY_PER_REQUEST --output text --query "TableDescription.$TABLE_FIELDS"; then
    say "table $TABLE: created"
    return 0
  fi
  [[ "$ERR" == *ResourceInUseException* ]] || die "table $TABLE: create-table failed: $ERR"
  say "table $TABLE: exists (created concurrently)"
  describe_table || die "table $TABLE: describe-table failed: $ERR"
  return 1
}

# ensure_ttl [new]: TTL on attribute "expires"; "new" (a table this run
# created, so TTL is off) skips the check.
ensure_ttl() {
  local status attr
  if [[ -z "${1:-}" ]]; then
    call dynamodb describe-time-to-live --table-name "$TABLE" --output text \
      --query '[TimeToLiveDescription.TimeToLiveStatus, TimeToLiveDescription.AttributeName]' ||
      die "table $TABLE: describe-time-to-live failed: $ERR"
    read -r status attr <<<"$OUT"
    case "$status" in
      ENABLED | ENABLING)
        [[ "$attr" == expires ]] || die "table $TABLE: TTL is on attribute '$attr', want 'expires'"
        say "table $TABLE: TTL on 'expires' is $status"
        return
        ;;
    esac
  fi
  if call dynamodb update-time-to-live --table-name "$TABLE" \
    --time-to-live-specification Enabled=true,AttributeName=expires; then
    say "table $TABLE: TTL enabled on 'expires'"
  elif [[ "$ERR" == *"already enabled"* ]]; then
    say "table $TABLE: TTL on 'expires' already enabled"
  else
    die "table $TABLE: update-time-to-live failed: $ERR"
  fi
}

ensure_table() {
  local deadline=$((SECONDS + TABLE_TIMEOUT)) status pending schema new=""
  local want="pk sk gsi1pk gsi1sk N INCLUDE"
  if describe_table; then
    say "table $TABLE: exists"
  elif [[ "$ERR" == *ResourceNotFoundException* ]]; then
    if create_table; then new=1; fi
  else
    die "table $TABLE: describe-table failed: $ERR"
  fi
  # Wait until the table and its indexes are ACTIVE.
  while read -r status pending schema <<<"$OUT"; [[ "$status" != ACTIVE || "$pending" != 0 ]]; do
    ((SECONDS < deadline)) || die "table $TABLE: not ACTIVE after ${TABLE_TIMEOUT}s (status $status, $pending index(es) not ACTIVE)"
    sleep 1
    describe_table || die "table $TABLE: describe-table failed: $ERR"
  done
  schema="$(printf '%s' "$schema" | tr -s '[:space:]' ' ' | sed 's/ $//')"
  # A table made before the index projected the status attributes only
  # projects ALL: the store reads the same from it.
  [[ "$schema" == "${want% INCLUDE} ALL" ]] && schema="$want"
  [[ "$schema" == "$want" ]] ||
    die "table $TABLE exists with another schema (keys, index 'active': '$schema'; want '$want'); delete it or set TILECACHE_DYNAMODB_TABLE"
  ensure_ttl "$new"
}

# ensure_queue <name> <attributes JSON>: create the queue, or bring the
# attributes of an existing one to the wanted values. Sets QUEUE_URL.
QUEUE_URL=""
ensure_queue() {
  local name="$1" attrs="$2"
  if call sqs create-queue --queue-name "$name" --attributes "$attrs" --output text --query QueueUrl; then
    QUEUE_URL="$OUT"
    say "queue $name: ready ($QUEUE_URL)"
    return
  fi
  [[ "$ERR" == *QueueAlreadyExists* || "$ERR" == *QueueNameExists* ]] ||
    die "queue $name: create-queue failed: $ERR"
  # It exists with other attributes: update them.
  call sqs get-queue-url --queue-name "$name" --output text --query QueueUrl ||
    die "queue $name: get-queue-url failed: $ERR"
  QUEUE_URL="$OUT"
  call sqs set-queue-attributes --queue-url "$QUEUE_URL" --attributes "$attrs" ||
    die "queue $name: set-queue-attributes failed: $ERR"
  say "queue $name: existed, attributes updated ($QUEUE_URL)"
}

ensure_queues() {
  local dlq_arn redrive
  ensure_queue "$DLQ" "{\"MessageRetentionPeriod\":\"$DLQ_RETENTION\"}"
  call sqs get-queue-attributes --queue-url "$QUEUE_URL" --attribute-names QueueArn \
    --output text --query Attributes.QueueArn || die "queue $DLQ: get-queue-attributes failed: $ERR"
  dlq_arn="$OUT"
  [[ "$dlq_arn" == arn:* ]] || die "queue $DLQ: unexpected ARN '$dlq_arn'"
  redrive="{\"deadLetterTargetArn\":\"$dlq_arn\",\"maxReceiveCount\":$MAX_RECEIVE_COUNT}"
  ensure_queue "$QUEUE" "{\"VisibilityTimeout\":\"$VISIBILITY_TIMEOUT\",\"RedrivePolicy\":\"${redrive//\"/\\\"}\"}"
}

main() {
  local start=$SECONDS
  if [[ -z "${AWS_ENDPOINT_URL_S3:-}${AWS_ENDPOINT_URL_DYNAMODB:-}${AWS_ENDPOINT_URL_SQS:-}" ]] &&
    ! command -v awslocal >/dev/null 2>&1; then
    command -v aws >/dev/null 2>&1 || die "neither awslocal nor aws found"
  fi
  describe_cli s3 AWS_ENDPOINT_URL_S3
  describe_cli dynamodb AWS_ENDPOINT_URL_DYNAMODB
  describe_cli sqs AWS_ENDPOINT_URL_SQS
  # The three services are independent: provision them in parallel (each
  # aws CLI call costs about a second of Python start-up).
  local part pids=() failed=0
  for part in bucket table queues; do
    (
      ERR_FILE="$ERR_DIR/$part"
      "ensure_$part"
    ) &
    pids+=("$!")
  done
  for part in "${pids[@]}"; do wait "$part" || failed=1; done
  ((failed == 0)) || die "provisioning failed (see above)"
  say "done in $((SECONDS - start))s"
}

main "$@"
