"""A worker stand-in for tests/llm/test_slots.py, run as its own process:

    python -m tests.llm.slot_caller REDIS_URL BASE_URL LIMIT PREFIX GO_FILE CALLS
    python -m tests.llm.slot_caller REDIS_URL BASE_URL LIMIT PREFIX hold LEASE_SECONDS

With CALLS it says "ready", waits for GO_FILE to exist (so every process calls at the same
time), then makes CALLS model calls through its own LLMClient and ServerSlots, as an RQ work
horse does. With ``hold`` it takes one slot with a lease of LEASE_SECONDS, says "held" and
sleeps until it is killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from redis import Redis

from app.llm import LLMClient, LLMSettings
from app.llm.slots import ServerSlots


def main(redis_url: str, base_url: str, limit: str, prefix: str, mode: str, arg: str) -> None:
    redis = Redis.from_url(redis_url)
    if mode == "hold":
        slots = ServerSlots(
            base_url, int(limit), redis=redis, lease_seconds=float(arg), prefix=prefix
        )
        with slots.hold():
            print("held", flush=True)
            time.sleep(600)
        return
    slots = ServerSlots(base_url, int(limit), redis=redis, max_wait=60, prefix=prefix)
    print("ready", flush=True)
    while not Path(mode).exists():
        time.sleep(0.01)
    settings = LLMSettings(base_url=base_url, model="m", max_retries=0)
    with LLMClient(settings, slots=slots) as client:
        for _ in range(int(arg)):
            completion = client.complete([{"role": "user", "content": "Grade this."}])
            print(f"queued_ms {completion.queued_ms}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
