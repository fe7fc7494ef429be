#!/usr/bin/env bash
# code-server (VS Code's workbench served to a browser) from the npm registry, built offline:
# Node 24 first on PATH and npm_config_nodedir pointing at Node 24's bundled headers, so
# node-gyp builds the native modules without downloading anything. Cached in a folder keyed on
# (code-server version, Node version). Idempotent.
set -euo pipefail
source "$(dirname "$0")/e2e-env.sh"
if [ -f "$CODE_SERVER_DIR/.complete" ] && [ -f "$CODE_SERVER_BIN" ]; then
  echo "install-code-server: code-server $CODE_SERVER_VERSION already in $CODE_SERVER_DIR"
  exit 0
fi
[ -x "$NODE24_BIN" ] || "$(dirname "$0")/install-node24.sh"
tmp="$CODE_SERVER_DIR.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
node24_bin_dir="$(dirname "$NODE24_BIN")"
(
  cd "$tmp"
  echo '{"private":true}' > package.json
  export PATH="$node24_bin_dir:$PATH"
  export npm_config_nodedir="$NODE24_HEADERS"
  npm install --no-audit --no-fund --loglevel=error --foreground-scripts \
    "code-server@$CODE_SERVER_VERSION" > install.log 2>&1 || { tail -50 install.log; exit 1; }
)
rm -rf "$CODE_SERVER_DIR"
mv "$tmp" "$CODE_SERVER_DIR"
touch "$CODE_SERVER_DIR/.complete"
"$NODE24_BIN" -p "require(process.argv[1]).version" "$CODE_SERVER_DIR/node_modules/code-server/package.json"
echo "install-code-server: done"
