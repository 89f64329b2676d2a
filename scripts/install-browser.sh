#!/usr/bin/env bash
# Install Chromium (Debian's package) for the browser tests in tests/browser/, which drive it
# with Playwright (Playwright's own browser downloads are never used).
exec bash "$(dirname "$0")/apt-install.sh" chromium chromium "the browser tests need it"
