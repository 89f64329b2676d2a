#!/usr/bin/env bash
# Install one Debian package when the program it provides is missing.
#   bash scripts/apt-install.sh PROGRAM PACKAGE "what needs it"
# PROGRAM is a command on PATH or a path pattern (e.g. /usr/lib/postgresql/*/bin/initdb).
# Idempotent: a quiet no-op when PROGRAM exists; installs with apt when we are root,
# otherwise says how and fails.
set -euo pipefail
program=${1:?usage: apt-install.sh PROGRAM PACKAGE WHY}
package=${2:?usage: apt-install.sh PROGRAM PACKAGE WHY}
why=${3:-}

command -v "$program" >/dev/null 2>&1 && exit 0
compgen -G "$program" >/dev/null && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "$package" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq "$package" >/dev/null; }
else
  echo "$package is missing${why:+ ($why)}: sudo apt-get install $package" >&2
  exit 1
fi
