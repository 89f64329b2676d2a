#!/usr/bin/env bash
# Install bubblewrap, the code judge's sandbox (docs/sandbox.md). Idempotent: quiet no-op when
# bwrap is already on PATH; installs it with apt when we are root, otherwise says how.
set -euo pipefail

command -v bwrap >/dev/null 2>&1 && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }
else
  echo "bubblewrap is missing (the code judge needs it): sudo apt-get install bubblewrap" >&2
  exit 1
fi
