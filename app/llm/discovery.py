"""Finding an OpenAI-compatible server on this machine, for ``evaluaitor run`` with no
``EVALUAITOR_LLM_BASE_URL``: a newcomer with Ollama or LM Studio running gets grading at once.

Only ``127.0.0.1`` is ever asked, on a short list of ports (the local servers' defaults, or
``EVALUAITOR_LLM_PROBE_PORTS``), with ``GET /v1/models``. A port where nothing listens refuses
at once; one that accepts is waited for patiently (PROBE_READ_TIMEOUT), because a server
computing a reply answers its model list only after it (llama.cpp serves one request at a
time). A port counts only when it answers as the OpenAI API does: 200, JSON, ``data`` listing
models with an ``id``; anything else there (a web page, a 404, another service) is passed over.
Proxy settings of the environment are ignored: the question is about this machine.

A server started after Evaluaitor is found too: :func:`watch` looks again every
``EVALUAITOR_LLM_PROBE_EVERY`` seconds while no server is known (``evaluaitor run`` watches in
the web process and in its worker, which then puts back in line the work that failed for
want of a model).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from app import safe_json
from app.llm.endpoints import Allowlists

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
#: Ollama, LM Studio, vLLM, llama.cpp's server: their default ports, asked in this order.
DEFAULT_PORTS = (11434, 1234, 8000, 8080)
#: Seconds to connect: where nothing listens, the refusal is immediate.
CONNECT_TIMEOUT = 0.5
#: Seconds a port that accepted the connection has to answer: a busy server answers after the
#: request it is computing (capped replies take well under a minute on a small CPU model).
PROBE_READ_TIMEOUT = 60.0
#: The environment variable ``evaluaitor run`` sets for its worker: look for a server while
#: none is configured.
WATCH_VARIABLE = "EVALUAITOR_LLM_DISCOVER"
#: What turns discovery off in ``EVALUAITOR_LLM_PROBE_PORTS``.
OFF = frozenset({"off", "none", "0"})


@dataclass(frozen=True)
class LocalServer:
    """A server that answered, with the models it offers (in its order, never empty)."""

    base_url: str
    models: tuple[str, ...]

    def choose_model(self, wanted: str | None) -> str:
        """``wanted`` (the configured model) when offered here, else the first offered."""
        return wanted if wanted in self.models else self.models[0]


def probe_ports(setting: str | None) -> tuple[int, ...]:
    """The ports a setting names: unset means the defaults, ``off`` none. Raises ValueError
    with a message naming the setting for anything but comma-separated port numbers."""
    if setting is None or not setting.strip():
        return DEFAULT_PORTS
    if setting.strip().lower() in OFF:
        return ()
    try:
        ports = tuple(int(part) for part in setting.split(",") if part.strip())
    except ValueError:
        ports = (0,)
    if not all(0 < port < 65536 for port in ports):
        raise ValueError(
            "EVALUAITOR_LLM_PROBE_PORTS must be port numbers separated by commas "
            f"(e.g. 11434,1234) or off, got {setting!r}"
        )
    return ports


def allowed_ports(ports: Sequence[int], config: Mapping[str, Any]) -> tuple[int, ...]:
    """The ports of ``ports`` whose server the site's allowlist of model servers
    (EVALUAITOR_LLM_ALLOWED_BASE_URLS, app.llm.endpoints) allows: a server it forbids is not
    even asked, so it is never adopted (a probe sends no work, only ``GET /v1/models``)."""
    site = Allowlists.of(config)
    return tuple(port for port in ports if site.allows(_base_url(port)))


def find_local_server(
    ports: Sequence[int], read_timeout: float = PROBE_READ_TIMEOUT
) -> LocalServer | None:
    """The first port of ``ports`` on 127.0.0.1 that answers as an OpenAI-compatible server
    offering at least one model, or None."""
    for port in ports:
        server = _probe(port, read_timeout)
        if server is not None:
            return server
    return None


def adopt(config: MutableMapping[str, Any], server: LocalServer) -> str:
    """Grade with ``server`` from now on: its URL and the model chosen into ``config``;
    returns the model."""
    model = server.choose_model(config.get("EVALUAITOR_LLM_MODEL"))
    config.update(EVALUAITOR_LLM_BASE_URL=server.base_url, EVALUAITOR_LLM_MODEL=model)
    return model


def watch(
    config: MutableMapping[str, Any],
    ports: Sequence[int],
    on_found: Callable[[LocalServer], None],
    *,
    every: float,
) -> None:
    """Look for a server every ``every`` seconds while ``config`` names none; the first found
    is adopted and handed to ``on_found`` (run it in a daemon thread: it ends with its
    process)."""
    while True:
        time.sleep(every)
        if config.get("EVALUAITOR_LLM_BASE_URL"):
            return
        server = find_local_server(ports)
        if server is not None:
            model = adopt(config, server)
            log.info("found a model server at %s; grading with %s", server.base_url, model)
            on_found(server)
            return


def _base_url(port: int) -> str:
    return f"http://{HOST}:{port}/v1"


def _probe(port: int, read_timeout: float) -> LocalServer | None:
    base_url = _base_url(port)
    timeout = httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT)
    try:
        response = httpx.get(f"{base_url}/models", timeout=timeout, trust_env=False)
    except httpx.HTTPError:  # nothing listens, or it does not speak HTTP in time
        return None
    if response.status_code != 200:
        return None
    try:
        body = safe_json.loads(response.content)
    except ValueError:  # a web page, or something else that is not JSON
        return None
    models = _model_ids(body)
    return LocalServer(base_url, models) if models else None


def _model_ids(body: Any) -> tuple[str, ...]:
    """The ``id`` of each entry of an OpenAI model list (``{"data": [{"id": ...}]}``)."""
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return ()
    ids = (entry.get("id") for entry in entries if isinstance(entry, dict))
    return tuple(dict.fromkeys(i for i in ids if isinstance(i, str) and i.strip()))
