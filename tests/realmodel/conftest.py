"""The model server the tests talk to, through a recording relay.

``scripts/model-server.sh`` starts llama.cpp's server with SmolLM2-135M and writes where it
listens to a JSON file named by EVALUAITOR_MODEL_SERVER (scripts/test.sh does this). Or set
EVALUAITOR_LLM_BASE_URL (with EVALUAITOR_LLM_MODEL, EVALUAITOR_LLM_API_KEY) to run the same
tests against a capable server; EVALUAITOR_LLM_ENSEMBLE_MODELS names the ensemble's two models
there (two names of the server's, comma-separated). Without either the tests are skipped, saying
how to run them; under CI that is an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.realmodel.recorder import Recorder
from tests.realmodel.works import Server, server_from_environment

HOW = "no model server: run `bash scripts/model-server.sh test` (or set EVALUAITOR_LLM_BASE_URL)"


@pytest.fixture(scope="session")
def model_server() -> Server:
    server = server_from_environment()
    if server is None:
        if os.environ.get("CI"):
            pytest.fail(HOW)
        pytest.skip(HOW)
    return server


@pytest.fixture(scope="session")
def relay(model_server: Server) -> Iterator[Recorder]:
    with Recorder(model_server.base_url, model_server.api_key) as recorder:
        yield recorder
