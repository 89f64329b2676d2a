#!/usr/bin/env bash
# Set up and run the whole test suite (and the linter and bandit's security checks), first on SQLite, then again on a
# real PostgreSQL server that scripts/postgres.sh installs and starts (skip that second pass
# with EVALUAITOR_TEST_POSTGRES=0). Tests run in parallel on every core (pytest-xdist; set
# EVALUAITOR_TEST_WORKERS=0 to run them in one process). Extra arguments go to pytest.
# A real Moodle 4.5 (scripts/moodle.sh) boots in the background during the SQLite pass; the
# tests in tests/moodle then run against it once, and it is stopped (skip with
# EVALUAITOR_TEST_MOODLE=0). So does a real model server (scripts/model-server.sh: llama.cpp
# with SmolLM2-135M, its wheel built once and cached) for tests/realmodel (skip with
# EVALUAITOR_TEST_MODEL=0).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# OWASP-style static checks (bandit): any finding of medium or high severity fails the run.
# A reviewed false positive is marked in place with '# nosec <test id>' and the reason.
.venv/bin/bandit --quiet --recursive app --severity-level medium
workers=(-n "${EVALUAITOR_TEST_WORKERS:-auto}")
# Moodle's and the model server's tests run on their own, once, against their servers.
apart=(--ignore=tests/moodle --ignore=tests/realmodel)

moodle="" pg="" model=""
cleanup() {
  if [ -n "$model" ]; then
    wait "${model_starting:-}" 2>/dev/null || true
    bash scripts/model-server.sh stop "$model"
    rm -f "$model.log"
  fi
  if [ -n "$moodle" ]; then
    wait "${moodle_starting:-}" 2>/dev/null || true  # a start cut short would leave it running
    bash scripts/moodle.sh stop "$moodle"
  fi
  if [ -n "$pg" ]; then
    local pg_ctl
    pg_ctl=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pg_ctl
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$pg_ctl" -D "$pg/pg/data" stop -m fast >/dev/null;
    else "$pg_ctl" -D "$pg/pg/data" stop -m fast >/dev/null; fi
    rm -rf "$pg"
  fi
}
trap cleanup EXIT
if [ "${EVALUAITOR_TEST_MOODLE:-1}" != 0 ]; then
  moodle=$(mktemp -d)
  nice -n 10 bash scripts/moodle.sh start "$moodle" &
  moodle_starting=$!
fi
if [ "${EVALUAITOR_TEST_MODEL:-1}" != 0 ]; then
  model=$(mktemp -d)
  bash scripts/model-server.sh start "$model" > "$model.log" 2>&1 &
  model_starting=$!
fi

.venv/bin/python -m pytest "${workers[@]}" "${apart[@]}" "$@"

if [ -n "$moodle" ]; then
  wait "$moodle_starting" || { echo "Moodle did not start (scripts/moodle.sh)" >&2; exit 1; }
  echo "Against a real Moodle ($(cut -c1-60 "$moodle/moodle.json")…)"
  # One test at a time: they share Moodle's one course, and two gradebook recalculations of one
  # course at once deadlock in Moodle's database ("Error writing to database").
  EVALUAITOR_MOODLE="$moodle/moodle.json" .venv/bin/python -m pytest -n 0 tests/moodle "$@"
  bash scripts/moodle.sh stop "$moodle"
  moodle=""
fi

if [ -n "$model" ]; then
  wait "$model_starting" || { cat "$model.log" >&2; echo "The model server did not start (scripts/model-server.sh)" >&2; exit 1; }
  echo "Against a real model server ($(cat "$model/model.json"))"
  # One grading at a time: the server computes one reply at a time, as a school's small one does.
  EVALUAITOR_MODEL_SERVER="$model/model.json" .venv/bin/python -m pytest -n 0 tests/realmodel "$@"
  bash scripts/model-server.sh stop "$model"
  rm -f "$model.log"
  model=""
fi

if [ "${EVALUAITOR_TEST_POSTGRES:-1}" != 0 ]; then
  pg=$(mktemp -d)
  chmod 755 "$pg"
  url=$(bash scripts/postgres.sh "$pg/pg")
  echo "Again on PostgreSQL ($url)"
  EVALUAITOR_TEST_DATABASE_URL="$url" .venv/bin/python -m pytest "${workers[@]}" "${apart[@]}" "$@"
fi
