#!/usr/bin/env bash
# Set up and run Evaluaitor locally: embedded Redis, database migrations, a worker and the
# web server on http://127.0.0.1:5000 (HOST and PORT override), and the practice platform.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The practice platform (a small LMS on localhost:5001) comes along for local use.
export EVALUAITOR_PRACTICE="${EVALUAITOR_PRACTICE:-1}"
exec .venv/bin/evaluaitor run --host "${HOST:-127.0.0.1}" --port "${PORT:-5000}"
