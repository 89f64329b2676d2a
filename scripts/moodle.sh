#!/usr/bin/env bash
# A real Moodle 4.5 for the tests in tests/moodle (the kit in ../shared/moodle, or the folder
# EVALUAITOR_MOODLE_KIT names: its start.sh installs PHP and PostgreSQL when missing).
#   bash scripts/moodle.sh start DIR          # start.sh DIR/site; its JSON line -> DIR/moodle.json
#   bash scripts/moodle.sh stop DIR           # stop it and remove DIR
#   bash scripts/moodle.sh test [PYTEST ARGS] # start one, run tests/moodle against it, stop it
# The tests find the site through EVALUAITOR_MOODLE=DIR/moodle.json (scripts/test.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${EVALUAITOR_MOODLE_KIT:-$(pwd)/../shared/moodle}

start() {
  local dir=${1:?usage: moodle.sh start DIR}
  [ -x "$kit/start.sh" ] || { echo "moodle.sh: no Moodle kit in $kit (set EVALUAITOR_MOODLE_KIT)" >&2; exit 1; }
  mkdir -p "$dir"
  chmod 755 "$dir"  # as root, start.sh runs PostgreSQL as postgres, which must reach DIR/site
  if ! bash "$kit/start.sh" "$dir/site" > "$dir/moodle.json.part" 2> "$dir/start.log"; then
    cat "$dir/start.log" >&2
    return 1
  fi
  mv "$dir/moodle.json.part" "$dir/moodle.json"
  # A new site's first course page writes settings that two parallel first views collide on.
  EVALUAITOR_MOODLE="$dir/moodle.json" .venv/bin/python -c \
    'from tests.moodle.site import Moodle; Moodle.from_environment().warm_up()'
}

stop() {
  local dir=${1:?usage: moodle.sh stop DIR}
  [ -d "$dir/site" ] && bash "$kit/stop.sh" "$dir/site" --remove
  rm -rf "$dir"
}

case ${1:-} in
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  test)
    shift
    dir=$(mktemp -d)
    trap 'stop "$dir"' EXIT
    start "$dir"
    EVALUAITOR_MOODLE="$dir/moodle.json" .venv/bin/python -m pytest tests/moodle "$@"
    ;;
  *) echo "usage: moodle.sh start DIR | stop DIR | test [PYTEST ARGS]" >&2; exit 2 ;;
esac
