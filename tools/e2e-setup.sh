#!/usr/bin/env bash
# Everything the e2e tests need, idempotent, from the package registries only.
set -euo pipefail
here="$(dirname "$0")"
start=$(date +%s)
"$here/install-apt.sh"
"$here/install-node24.sh"
"$here/install-code-server.sh"
echo "e2e-setup: ready in $(( $(date +%s) - start )) s"
