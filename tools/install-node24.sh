#!/usr/bin/env bash
# Node 24 from the npm registry's `node` package (code-server 4.139 needs Node 24; the rest of
# the build runs on the system Node). Idempotent: skipped when the pinned binary is present.
set -euo pipefail
source "$(dirname "$0")/e2e-env.sh"
if [ -x "$NODE24_BIN" ] && [ "$("$NODE24_BIN" --version)" = "v$NODE24_VERSION" ]; then
  echo "install-node24: node $NODE24_VERSION already in $NODE24_DIR"
  exit 0
fi
rm -rf "$NODE24_DIR.tmp"
mkdir -p "$NODE24_DIR.tmp"
(cd "$NODE24_DIR.tmp" && echo '{"private":true}' > package.json &&
  npm install --no-audit --no-fund --loglevel=error "node@$NODE24_VERSION")
rm -rf "$NODE24_DIR"
mv "$NODE24_DIR.tmp" "$NODE24_DIR"
# npm's `node` package links its binary through a wrapper; make sure the real one is executable.
"$NODE24_BIN" --version
test -d "$NODE24_HEADERS/include/node"
echo "install-node24: done"
