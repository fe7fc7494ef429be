#!/usr/bin/env bash
# Debian packages for the e2e tests: Chromium (the browser Playwright drives) and libkrb5-dev
# (headers one of code-server's native modules builds against). Idempotent.
set -euo pipefail
need=()
for pkg in chromium libkrb5-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ "${#need[@]}" -eq 0 ]; then
  echo "install-apt: chromium and libkrb5-dev already installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-apt: installing ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "install-apt: done"
