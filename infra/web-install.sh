#!/usr/bin/env bash
# Installs web/node_modules from web/package-lock.json (`npm ci`: exactly the
# locked versions, the lockfile never rewritten), once: the lockfile's
# SHA-256 is kept in web/node_modules/.lockhash, and an install whose hash
# matches the lockfile's is reused as it is. `make web`, `make lint-web` and
# `make test-web` start with it.
set -euo pipefail
cd "$(dirname "$0")/../web"

want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ -f node_modules/.lockhash && "$(cat node_modules/.lockhash)" == "$want" ]]; then
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "web-install: npm is needed to install web/node_modules" >&2; exit 1; }
echo "web-install: npm ci (web/package-lock.json changed or not installed yet)" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" > node_modules/.lockhash
