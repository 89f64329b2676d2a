#!/usr/bin/env bash
# Install Chromium (Debian's package) for the browser tests in tests/browser/, which drive it
# with Playwright (Playwright's own browser downloads are never used). Idempotent: a quiet
# no-op when chromium is on PATH; installs it with apt when we are root, otherwise says how.
set -euo pipefail

command -v chromium >/dev/null 2>&1 && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq chromium >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
else
  echo "chromium is missing (the browser tests need it): sudo apt-get install chromium" >&2
  exit 1
fi
