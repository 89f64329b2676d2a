#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the test suite (Debian's packages, installed here
# when missing) and print its SQLAlchemy URL. Usage: url=$(bash scripts/postgres.sh DIR)
# The server listens on 127.0.0.1 only and lives in DIR; stop it with
#   pg_ctl -D DIR/data stop   (scripts/test.sh does this for you).
set -euo pipefail
dir=${1:?usage: postgres.sh DIR}

bash "$(dirname "$0")/apt-install.sh" '/usr/lib/postgresql/*/bin/initdb' postgresql \
  "the PostgreSQL test pass needs it; skip that pass with EVALUAITOR_TEST_POSTGRES=0"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

mkdir -p "$dir"
run=()
if [ "$(id -u)" = 0 ]; then  # PostgreSQL refuses to run as root
  chown postgres "$dir"
  run=(runuser -u postgres --)
fi
"${run[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -o "-h 127.0.0.1 -p $port -k $dir -F" start >/dev/null
"${run[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres evaluaitor_test
echo "postgresql+psycopg://postgres@127.0.0.1:$port/evaluaitor_test"
