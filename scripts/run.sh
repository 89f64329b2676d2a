#!/usr/bin/env bash
# Set up and run Evaluaitor locally: embedded Redis, database migrations, a worker and the
# web server on http://127.0.0.1:5000 (HOST and PORT override).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/evaluaitor run --host "${HOST:-127.0.0.1}" --port "${PORT:-5000}"
