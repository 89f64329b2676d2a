#!/usr/bin/env bash
# Create .venv and install Evaluaitor with its test tools. Safe to run again: it only
# reinstalls when pyproject.toml changed. Needs Python 3.11+; nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if ! "$python" -m venv .venv 2>/dev/null; then
    # Debian ships venv separately; install it when we may.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
      rm -rf .venv && "$python" -m venv .venv
    else
      echo "Python's venv module is missing: sudo apt-get install python3-venv" >&2
      exit 1
    fi
  fi
fi

# The code judge runs student programs inside bubblewrap (Debian's package).
bash scripts/install-sandbox.sh || echo "warning: bubblewrap is missing; the code judge cannot run" >&2
# Java submissions (and the static checks' compile) need a JDK; Debian 12's default is JDK 17.
bash scripts/apt-install.sh javac default-jdk-headless "Java programs are compiled with it" \
  || echo "warning: javac is missing; Java tests of the judge and the static checks will be skipped" >&2
# The browser tests drive Debian's Chromium (tests/browser/ skips without it).
bash scripts/install-browser.sh || echo "warning: chromium is missing; browser tests will be skipped" >&2

stamp=.venv/.evaluaitor-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
  echo "$want" > "$stamp"
fi

# Interface translations: compiled from the committed .po catalogues.
bash scripts/translations.sh compile
