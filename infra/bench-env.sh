# Sourced by the bench scripts: the ports and directories of the local AWS
# stack and the test WMS they start, apart from `make test`'s and the
# devstack's so that they can run beside them. TILECACHE_BENCH_* override.
export TILECACHE_DEVSTACK_DIR="${TILECACHE_BENCH_DEVSTACK_DIR:-$PWD/.devstack/bench}"
export TILECACHE_S3_PORT="${TILECACHE_BENCH_S3_PORT:-9360}"
export TILECACHE_S3_CONSOLE_PORT="${TILECACHE_BENCH_S3_CONSOLE_PORT:-9361}"
export TILECACHE_DYNAMODB_PORT="${TILECACHE_BENCH_DYNAMODB_PORT:-9362}"
export TILECACHE_SQS_PORT="${TILECACHE_BENCH_SQS_PORT:-9363}"
export TILECACHE_CDN_PORT="${TILECACHE_BENCH_CDN_PORT:-9365}"
export TILECACHE_WMS_DIR="${TILECACHE_BENCH_WMS_DIR:-$PWD/.devstack/bench-wms}"
export TILECACHE_WMS_PORT="${TILECACHE_BENCH_WMS_PORT:-9364}"
