"""Read the score out of an LLM grader's reply (free text or JSON).

An invented number in a student's gradebook is the worst outcome, so every rule errs towards
``None``; the caller then routes the submission to teacher review.

Decision rules, in order:

1. JSON. If the whole reply, a fenced block, or the text from the first ``{`` to the last ``}``
   is a JSON object with a score key ("final_score", "total", "score", "grade", "nota",
   "puntuacion", ...), directly or in exactly one nested object (``{"result": {...}}``), it decides:
   the value is a number or a string such as "8/10" or "8,5"; "max_score", "scale", "out_of" or
   "max" give the scale. Final keys beat totals beat generic keys; disagreeing keys of the same
   strength, conflicting scales or an unusable value (null, "N/A") give None. If the prose around
   a JSON block states a score too, the two must agree.
2. Text is read line by line after dropping Markdown decoration and list bullets, folding accents
   and case. Fenced code blocks are skipped: they quote the student's work.
3. A marker hit is a marker, a separator (":", "=", a table "|", a spaced dash, or "is", "es",
   "de", ...; may be omitted before a value with a written scale) and a value: "8", "8,5", "8.5",
   "8'5", "8/10", "8 sobre 10", "7 de 10", "8 out of 10", "85%" (scale 100), then optionally
   "points"/"puntos"/"punts", then the end of the line, punctuation, a bracket, a dash or a
   qualitative grade ("Notable"). Any other word after the number ("Grade 10 student",
   "Total: 532 words") means the line is not a score. A marker alone on its line (a heading)
   takes the next line as its value. Markers count at the start of a line; the unambiguous
   multi-word ones ("final score", "nota final", "total score", ...) anywhere in it. A qualifier
   is part of the marker: "Suggested grade", "Nota sugerida", "Nota final corregida".
4. Strength: final markers (Final score/grade/mark, Nota/Puntuación/Calificación/Qualificació/
   Puntuació final) > totals (Total, Overall, Total score, Nota global, ...) > generic (Nota,
   Grade, Score, Mark, Puntuación, Calificación, Qualificació, Puntuació). Only the strongest level
   present counts.
5. Within it: an unreadable value after a separator (N/A, TBD, "-", a range "7-8" / "7 o 8", a
   negative, "2024", "1,000") gives None. Hits agree when equal, or equal as fractions (16/20 and
   8/10). If all agree the last is returned, but repeated totals or generic hits must each carry a
   written scale (several bare "Score: 2" lines are per-criterion scores). Disagreeing final hits:
   the last wins only if it is on the last line or starts in the last 20% of the reply (the model
   restating or correcting itself at the end), else None. Disagreeing totals (per-section) or
   generic hits (per-criterion) give None, and so does a total contradicted by a generic hit on
   the same scale ("Total: 8/10 ... Grade: 7/10"); generic hits on other scales are criteria.
6. With no marker hit at all, a fraction or percentage that ends the last line, alone or after a
   sentence end ("... well done. 7/10"), is read (marker "fraction").
7. The score must lie in 0..scale, scale being the written one, else ``max_score``; a written scale
   must be positive. A written scale other than ``max_score`` is returned as is, and
   :meth:`ScoreReading.mismatch` tells the caller to send the work to review: "5/5" when the
   prompt asked for a score out of 10 is a model that did not do what it was asked, and neither
   10/10 nor 5/10 is a grade anyone gave.
8. What fits the scale asked for (:func:`misfit`, one rule for every strategy). Readable: a
   number within 0..max; a text with the asked scale ("8/10" or "8 out of 10" when 10 was
   asked, "85%" when 100 was). Ambiguous, so held for a teacher with a reason and never
   converted: a written scale other than the one asked ("8/10" or ``"max": 10`` when 100 was
   asked, "85%" when 10 was), and a value strictly between 0 and 1 when the asked maximum is
   10 or more (0.5 on a 0-100 scale is a fraction of the whole far more often than half a
   point; the rare half point a teacher confirms). Not a score at all: a value outside
   0..scale, a range, words ("eight", "N/A"); the caller then has no score, and the work goes
   to review (or is asked again where the strategy re-asks).
"""

import json
import math
import re
import unicodedata
from collections.abc import Container
from dataclasses import dataclass
from typing import Any, NamedTuple

from app import safe_json
from app.catalogue import N_


@dataclass(frozen=True)
class ScoreReading:
    """A score read from a grader reply, with the evidence a teacher needs to audit it."""

    score: float  # as written by the model
    scale: float | None  # the maximum the model wrote; None if it gave none
    marker: str  # rule that matched: "final-marker", "total", "marker", "json" or "fraction"
    text: str  # the matched snippet, shown to the teacher as evidence

    def mismatch(self, asked: float) -> str | None:
        """The review reason when the score does not fit ``asked``, the maximum its prompt set
        (:func:`misfit`); None when it does."""
        return misfit(self.score, self.scale, asked)


#: Why a score on a scale the prompt did not ask for is held, never converted.
OFF_SCALE = N_(
    "The grader gave %(score)s out of %(written)s, but it was asked for a score out of "
    "%(asked)s. The score was not converted; a teacher needs to review it."
)


def off_scale(score: float, written: float | None, asked: float) -> str | None:
    """:data:`OFF_SCALE` filled in when ``written`` is a scale other than ``asked``."""
    if written is None or math.isclose(written, asked):
        return None
    return OFF_SCALE % {"score": f"{score:g}", "written": f"{written:g}", "asked": f"{asked:g}"}


#: Why a bare value below 1 on a larger scale is held: it reads as a fraction of the whole.
FRACTION = N_(
    "The grader gave %(score)s, which reads as a fraction of the whole rather than a score out "
    "of %(asked)s. The score was not converted; a teacher needs to review it."
)
#: From this asked maximum up, a score strictly between 0 and 1 is taken for a fraction.
FRACTION_FROM = 10


def misfit(score: float, written: float | None, asked: float) -> str | None:
    """The review reason when ``score`` (with the scale the model wrote, if any) does not fit
    the ``asked`` maximum unambiguously: another written scale, or a value that reads as a
    fraction of the whole (rule 8 above); None when it fits."""
    if reason := off_scale(score, written, asked):
        return reason
    if asked >= FRACTION_FROM and 0 < score < 1:
        return FRACTION % {"score": f"{score:g}", "asked": f"{asked:g}"}
    return None


_FINAL, _TOTAL, _GENERIC = 3, 2, 1
_LABELS = {_FINAL: "final-marker", _TOTAL: "total", _GENERIC: "marker"}
_FINAL_WORDS = ("nota", "puntuacion", "puntuacio", "calificacion", "qualificacio")
_MARKERS = {
    **dict.fromkeys(("final score", "final grade", "final mark"), _FINAL),
    **{f"{word} final": _FINAL for word in _FINAL_WORDS},
    **dict.fromkeys(
        (
            "total",
            "overall",
            "total score",
            "total grade",
            "total points",
            "total marks",
            "overall score",
            "overall grade",
            "puntuacion total",
            "puntuacio total",
            "puntos totales",
            "punts totals",
            "nota global",
        ),
        _TOTAL,
    ),
    **dict.fromkeys(("grade", "score", "mark", *_FINAL_WORDS), _GENERIC),
}
_JSON_SCORE_KEYS = {key.replace(" ", "_"): rank for key, rank in _MARKERS.items()} | dict.fromkeys(
    ("points", "puntos", "punts"), _GENERIC
)
_JSON_SCALE_KEYS = frozenset(
    (
        "max_score",
        "scale",
        "out_of",
        "max",
        "maximum",
        "max_points",
        "max_grade",
        "nota_maxima",
        "puntuacion_maxima",
    )
)

_NUM = r"[0-9]{1,3}(?:[.,'][0-9]{1,2})?"  # at most 3 digits: "2024" and "1,000" are no scores
_OF = r"(?:/|out of|sobre|de|of)"
_VALUE = re.compile(
    rf"(?<![0-9.,'/])(?P<score>{_NUM})(?:\s*(?P<pct>%)|\s*{_OF}\s*(?P<scale>{_NUM}))?"
    r"(?![0-9]|[.,'/][0-9])"  # not part of a date, version or longer number
)
_POINTS = r"(?:\s*(?:points?|pts?|puntos?|punts?|marks?)\b)?"
_QUALIFIER = r"(?:suggested|proposed|recommended|awarded|revised|corrected|adjusted)"
_QUALIFIER_AFTER = (
    r"(?:sugerida|propuesta|obtenida|asignada|proposada|suggerida|obtinguda|"
    r"corregida|revisada|ajustada|suggested|proposed|awarded|revised|corrected)"
)
_MARKER = re.compile(
    rf"(?<!\w)(?:{_QUALIFIER} )?(?P<m>{'|'.join(sorted(_MARKERS, key=len, reverse=True))})"
    rf"(?: {_QUALIFIER_AFTER})?(?!\w)"
)
_LEAD = re.compile(
    rf"\s*(?:\(\s*(?:{_OF}|max(?:imum|imo|im)?)\s*(?P<pre>{_NUM})\s*\))?"
    r"\s*(?P<sep>[:=|]|[-–—](?=\s))?\s*"
    r"(?P<conn>(?:(?:is|was|es|de|of|un|una|a|an|would be|seria|sera|queda)\s+){0,3})"
)
_RANGE = re.compile(r"\s*(?:[-–—,;+&~→]|and|or|to|y|o|i|a|u)\s*[0-9]")
_TAIL = re.compile(
    rf"{_POINTS}(?:\s*\(\s*{_OF}\s*(?P<post>{_NUM})\s*\))?\s*(?:$|[.!;,)(\[|→–—-]|"
    r"(?:notable|sobresaliente|excelente|excel·lent|aprobado|aprovat|suficiente|insuficiente|"
    r"suspenso|suspes|bien)\b)"
)
_PLACEHOLDER = re.compile(  # after a separator: a value meant as a score, but not a usable one
    r"(?:n/?a|tbd|tbc|pending|pendiente|pendent|ungraded|[-–—−?]+)(?![a-z])"
    r"|[0-9][0-9.,'/]*(?![0-9.,'/]|\s*[a-z])"  # "2024", "1,000"; not "1,250 words"
)
_TRAILING = re.compile(rf"(?:^|[.!?] )(?:{_VALUE.pattern}){_POINTS}\s*[.!]?$")
_DECORATION = re.compile(r"[*_`#>$]+")
_BULLET = re.compile(r"^(?:[-+•]|[0-9]{1,2}[.)]|[a-z]\))\s+")
_LEADING_SYMBOLS = re.compile(r"^\W+(?=[a-z])")
_FENCE = ("```", "~~~")


class _Parsed(NamedTuple):
    score: float | None  # None: a value is there but unreadable (N/A, a range, ...)
    scale: float | None


class _Hit(NamedTuple):
    rank: int
    reading: ScoreReading | None
    line: int
    offset: int


def read_score(reply: str, max_score: float | None = None) -> ScoreReading | None:
    """Return the grader's score, or None when no unambiguous score is present, or when the score
    is outside 0..scale (scale = the written scale, else max_score if given)."""
    found, reading = _from_json(reply)
    prose = _from_text(reply)
    if not found:
        reading = prose
    elif reading and prose and not _agree(reading, prose):
        reading = None
    if reading is None or reading.score < 0:
        return None
    scale = reading.scale if reading.scale is not None else max_score
    if scale is not None and (scale <= 0 or reading.score > scale):
        return None
    return reading


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFD", text.casefold())
    return text if text.isascii() else "".join(c for c in text if not unicodedata.combining(c))


def fold_key(text: str) -> str:
    """A JSON key or a name as a person compares it: case, accents, spaces and dashes aside
    ("Puntuación máxima" and "puntuacion_maxima" are one key)."""
    return re.sub(r"[\s-]+", "_", _fold(text).strip())


def _normalise(line: str) -> str:
    text = _DECORATION.sub(" ", _fold(line)).strip(" \t\r\n|")
    return _LEADING_SYMBOLS.sub("", " ".join(_BULLET.sub("", text).split()))


def _num(text: str) -> float:
    return float(text.replace(",", ".").replace("'", "."))


def _parse(text: str, pos: int, separated: bool, scale: str | None = None) -> _Parsed | None:
    """Read the value at ``pos``; None when the words there are not a score at all."""
    value = _VALUE.match(text, pos)
    if value is None or _RANGE.match(text, value.end()):
        return _Parsed(None, None) if separated and _PLACEHOLDER.match(text, pos) else None
    tail = _TAIL.match(text, value.end())
    if tail is None or not (separated or value["scale"] or value["pct"]):
        return None
    scale = "100" if value["pct"] else value["scale"] or tail["post"] or scale
    return _Parsed(_num(value["score"]), _num(scale) if scale else None)


def _lines(reply: str) -> list[tuple[str, str, int]]:
    """(normalised, original, offset) of each non-empty line; a fence line stands for its block."""
    lines, offset, fenced = [], 0, False
    for raw in reply.splitlines(keepends=True):
        stripped = raw.strip()
        if stripped.startswith(_FENCE):
            fenced = not fenced
            lines.append(("```", stripped, offset))
        elif not fenced and (norm := _normalise(raw)):
            lines.append((norm, stripped, offset))
        offset += len(raw)
    return lines


def _from_text(reply: str) -> ScoreReading | None:
    lines = _lines(reply)
    hits: list[_Hit] = []
    for i, (norm, original, _) in enumerate(lines):
        for marker in _MARKER.finditer(norm):
            rank = _MARKERS[marker["m"]]
            if marker.start() and (rank == _GENERIC or " " not in marker["m"]):
                continue  # a lone word mid-sentence ("the grade of ...") is no marker
            lead = _LEAD.match(norm, marker.end())
            at, text, pos, separated = i, original, lead.end(), bool(lead["sep"] or lead["conn"])
            if pos == len(norm) and i + 1 < len(lines):  # heading: the value is on the next line
                at, pos, separated = i + 1, 0, True
                text = f"{original} {lines[at][1]}"
            parsed = _parse(lines[at][0], pos, separated, lead["pre"])
            if parsed is not None:
                reading = (
                    None
                    if parsed.score is None
                    else ScoreReading(parsed.score, parsed.scale, _LABELS[rank], text[:160])
                )
                hits.append(_Hit(rank, reading, at, lines[at][2]))
    if not hits:
        return _trailing(lines)
    rank = max(hit.rank for hit in hits)
    top = [hit for hit in hits if hit.rank == rank]
    last = top[-1].reading
    if last is None or any(hit.reading is None for hit in top):
        return None
    if all(_agree(hit.reading, last) for hit in top):
        repeated_bare = len(top) > 1 and rank != _FINAL and any(not h.reading.scale for h in top)
        overruled = rank == _TOTAL and any(  # "Total: 8/10 ... Grade: 7/10": which one?
            h.reading and h.reading.scale == last.scale and not _agree(h.reading, last)
            for h in hits
        )
        return None if repeated_bare or overruled else last
    near_end = top[-1].line == len(lines) - 1 or top[-1].offset >= 0.8 * len(reply.rstrip())
    return last if rank == _FINAL and near_end else None


def _trailing(lines: list[tuple[str, str, int]]) -> ScoreReading | None:
    """A fraction ending the reply on its own ("... well done. 7/10") with no marker."""
    match = _TRAILING.search(lines[-1][0]) if lines else None
    if match is None or not (match["scale"] or match["pct"]):
        return None
    scale = 100.0 if match["pct"] else _num(match["scale"])
    return ScoreReading(_num(match["score"]), scale, "fraction", lines[-1][1][-160:])


def _agree(a: ScoreReading, b: ScoreReading) -> bool:
    if a.score == b.score and (a.scale is None or b.scale is None or a.scale == b.scale):
        return True
    return bool(a.scale and b.scale) and math.isclose(a.score / a.scale, b.score / b.scale)


def _from_json(reply: str) -> tuple[bool, ScoreReading | None]:
    """(whether a JSON object with a score key was found, its reading)."""
    start, end = reply.find("{"), reply.rfind("}")
    for text in (reply.strip(), *_fenced_blocks(reply), reply[start : end + 1]):
        try:
            obj = safe_json.loads(text) if text.startswith("{") else None
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        holders = (
            [obj]
            if _keyed(obj, _JSON_SCORE_KEYS)
            else [v for v in obj.values() if isinstance(v, dict) and _keyed(v, _JSON_SCORE_KEYS)]
        )
        if holders:
            return True, _json_reading(holders[0]) if len(holders) == 1 else None
    return False, None


def _fenced_blocks(reply: str) -> list[str]:
    blocks: list[str] = []
    current: list[str] | None = None
    for line in reply.splitlines():
        if line.strip().startswith(_FENCE):
            if current is not None:
                blocks.append("\n".join(current).strip())
            current = [] if current is None else None
        elif current is not None:
            current.append(line)
    return blocks


def _keyed(obj: dict[str, Any], keys: Container[str]) -> dict[str, tuple[str, Any]]:
    """The items of ``obj`` whose folded key is in ``keys``."""
    folded = {k: fold_key(k) for k in obj if isinstance(k, str)}
    return {folded[k]: (k, obj[k]) for k in folded if folded[k] in keys}


def read_number(value: Any) -> tuple[float, float | None] | None:
    """A score as a JSON value holds it: a number, or a string such as "8,5", "8/10" or "85%";
    (score, written scale or None), or None when it is no usable score."""
    parsed = _json_value(value)
    return None if parsed is None else (parsed.score, parsed.scale)


def _json_value(value: Any) -> _Parsed | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, str):
        parsed = _parse(_normalise(value), 0, True)
        return parsed if parsed and parsed.score is not None else None
    return _Parsed(float(value), None) if math.isfinite(value) else None


def _json_reading(obj: dict[str, Any]) -> ScoreReading | None:
    scores = _keyed(obj, _JSON_SCORE_KEYS)
    rank = max(_JSON_SCORE_KEYS[key] for key in scores)
    chosen = [item for key, item in scores.items() if _JSON_SCORE_KEYS[key] == rank]
    parsed = [_json_value(value) for _, value in chosen]
    limits = [_json_value(value) for _, value in _keyed(obj, _JSON_SCALE_KEYS).values()]
    if None in parsed or None in limits:
        return None
    scales = {p.scale for p in parsed if p.scale is not None} | {p.score for p in limits}
    if len({p.score for p in parsed}) > 1 or len(scales) > 1:
        return None
    key, value = chosen[-1]
    text = json.dumps({key: value}, ensure_ascii=False)[:160]
    return ScoreReading(parsed[0].score, scales.pop() if scales else None, "json", text)
