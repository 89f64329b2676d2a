"""How long grounding takes (app.grading.grounding): preparing a work of 10 KB to 1 MB, and
checking quotes in it: found exactly, found despite OCR slips, invented (the slowest: the
whole work is searched and nothing matches), and with an ellipsis.

    .venv/bin/python bench/bench_grounding.py [--repeat 5]

Prints the best of ``--repeat`` runs of each, in milliseconds.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.grading.grounding import Grounds, Text  # noqa: E402

#: Words to write works of any length from: prose with accents, numbers and punctuation.
VOCABULARY = (  # noqa: SIM905 (prose reads better than a list of words)
    "the river carries sediment to the sea and floods renew the plains; erosion shapes "
    "valleys over millennia. Photosynthesis converts light energy into chemical energy, "
    "chlorophyll absorbs red and blue light, the Calvin cycle fixes carbon dioxide. "
    "La revolución empezó en 1789 por la deuda y la desigualdad — según los historiadores "
    "modernos, «crisis fiscal» y hambre."
).split()


def work(chars: int, seed: int = 7) -> str:
    """A text of about ``chars`` characters, in lines of about 70, words drawn at random."""
    rng = random.Random(seed)
    lines, line, size = [], [], 0
    while size < chars:
        word = rng.choice(VOCABULARY)
        line.append(word)
        size += len(word) + 1
        if sum(len(w) + 1 for w in line) > 70:
            lines.append(" ".join(line))
            line = []
    return "\n".join([*lines, " ".join(line)])


def best(repeat: int, run: Callable[[], object]) -> float:
    """The fastest of ``repeat`` runs, in ms: the least disturbed by other work."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def ocr(quote: str) -> str:
    """``quote`` as OCR might read it: "m" as "rn", "l" as "1", a space lost (these three
    are folded away), and "e" read as "c" twice (found approximately)."""
    return quote.replace("m", "rn", 1).replace("l", "1", 1).replace(" ", "", 1).replace("e", "c", 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    assignment = Text("Explain how rivers shape land.", "States a clear thesis.")
    print("| work | prepare | exact | OCR slips | invented | ellipsis | invented, 300 chars |")
    print("|---|---|---|---|---|---|---|")
    for chars in (10_000, 100_000, 1_000_000):
        text = work(chars)
        grounds = Grounds(Text(text), assignment)
        middle = len(text) // 2
        start = text.index(" ", middle) + 1
        quote = text[start : start + 80]
        far = text[start + 5000 : start + 5060] if chars > 10_000 else text[-60:]
        quotes = {
            "exact": quote,
            "OCR slips": ocr(quote),
            "invented": "the student proves the theorem of Pythagoras with a drawing",
            "ellipsis": f"{quote[:40]} … {far[-40:]}",
            "invented, 300 chars": work(300, seed=11),  # the longest quote criteria keep
        }
        verdicts = {label: str(grounds.check(q)) for label, q in quotes.items()}
        assert verdicts == {
            "exact": "verified",
            "OCR slips": "verified",
            "invented": "not found in the work",
            "ellipsis": "verified",
            "invented, 300 chars": "not found in the work",
        }, verdicts
        timings = [best(args.repeat, lambda text=text: Grounds(Text(text), assignment))]
        timings += [best(args.repeat, lambda q=q, g=grounds: g.check(q)) for q in quotes.values()]
        print(f"| {chars // 1000} KB | " + " | ".join(f"{t:.1f} ms" for t in timings) + " |")


if __name__ == "__main__":
    main()
