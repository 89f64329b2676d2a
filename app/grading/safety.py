"""Checks on a student's text before an LLM grader reads it: injection flags and PII masking.

The submission always reaches the model as delimited data, so these checks never alter a grade.
``inspect`` tells the teacher where the text tries to instruct the grader, hides text, or grades
itself; ``strip_invisible`` removes the characters that hide text, and ``mask_pii`` replaces
obvious personal data with placeholders (``[email]``, ``[phone]``, ``[id]``, ``[name]``).

Matching runs on a folded copy of the text (compatibility forms, no accents, lower case, Latin
lookalikes for Cyrillic/Greek letters, invisible characters removed), so "ig<U+200B>nоre" (with
a Cyrillic o) still reads "ignore". Every pattern is linear: no nested unbounded repetition, and
runs are only tried from their start. Phrases mentioned mid-sentence, in quotes, or in a text
about prompt injection are still flagged, with a message saying they may be a quotation.
"""

from __future__ import annotations

import re
import string
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

MAX_FLAGS = 20  # a teacher reads them; past this the submission is clearly hostile anyway
_PER_PATTERN = 5  # distinct hits kept per pattern, so one repeated trick cannot hide the others

#: Document kinds (``app.extract.Kind`` values) whose numbers may be masked: in code, masking a
#: number changes the program.
PROSE_KINDS = frozenset({"pdf", "docx", "text", "markdown"})


@dataclass(frozen=True)
class SafetyFlag:
    code: str  # "PromptInjection", "HiddenText" or "ScoreClaim"
    message: str  # for the teacher
    evidence: str  # the matched snippet, shortened, invisible characters shown as <U+200B>


@dataclass(frozen=True)
class MaskingReport:
    counts: dict[str, int]  # replacements by placeholder: "email", "phone", "id", "name"


_INVISIBLE = re.compile(
    r"[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
# ZWJ/ZWNJ after emoji or non-Latin letters join them legitimately; a BOM may open the text.
_ZERO_WIDTH = re.compile(
    r"(?<![\u0250-\U0010ffff])[\u200c\u200d]|[\u180e\u200b\u2060-\u2064]|(?<=[\s\S])\ufeff"
)
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
_TAG_RUN = re.compile(r"(?<![\U0001f3f4\U000e0000-\U000e007f])[\U000e0000-\U000e007f]+")  # 🏴 flags
_TAG_TO_ASCII = {
    c: chr(c - 0xE0000) if 0xE0020 <= c < 0xE007F else None for c in range(0xE0000, 0xE0080)
}
_BLANK_RUN = re.compile(r"(?<!\s)\s{100,}+(?=\S)")
_LONG_BLANK = re.compile(r"\s{8,}")

_LOOKALIKES = str.maketrans(
    "авекмнорстухіјѕԁһԛԝӏɡıαβεηικμνορτυχ“”„‟«»″‘’‚‛ʼ´‐‑‒–—",
    'abekmhopctyxijsdhqwlgiabenikuvoptux"""""""\'\'\'\'\'\'-----',
)
_ASCII_LOWER = {ord(c): c.lower() for c in string.ascii_uppercase}


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """One character as the patterns see it, so disguised letters read as the plain ones."""
    if unicodedata.category(char) in ("Cf", "Mn", "Me"):
        return ""
    kept = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    folded = unicodedata.normalize("NFC", kept).casefold().translate(_LOOKALIKES)
    return " " if folded.isspace() else folded


class _Folded:
    """Text folded for matching, and the way back from a folded offset to the original."""

    def __init__(self, text: str) -> None:
        table = {ord(c): _fold_char(c) for c in set(text) if not c.isascii()} | _ASCII_LOWER
        self.text = text.translate(table)
        self._folded, self._orig = [0], [0]  # offsets where the two texts' alignment changes
        resized = "".join(chr(c) for c, folded in table.items() if len(folded) != 1)
        shift = 0
        for m in re.finditer(f"[{re.escape(resized)}]", text) if resized else ():
            self._folded.append(m.start() + shift)
            self._orig.append(m.start())
            shift += len(table[ord(m.group())]) - 1
            self._folded.append(m.end() + shift)
            self._orig.append(m.end())

    def orig(self, offset: int) -> int:
        """Offset in the original text; removed characters before ``offset`` are skipped."""
        i = bisect_right(self._folded, offset) - 1
        position = self._orig[i] + offset - self._folded[i]
        return min(position, self._orig[i + 1] - 1) if i + 1 < len(self._orig) else position


def _words(*alternatives: str) -> re.Pattern[str]:
    """Compile phrases written with plain spaces; each space matches any run of blanks."""
    return re.compile("|".join(alternatives).replace(" ", r"\s+"), re.MULTILINE)


_FILL_EN = r"(?:(?:all|any|every|the|your|my|these|those|of|other) ){0,4}"
_FILL_ES = r"(?:(?:todas|todos|toda|todo|las|los|la|el|tus|sus|estas|esas|de) ){0,3}"
_FILL_CA = r"(?:(?:totes|tots|tot|les|els|la|el|teves|de) |l'){0,3}"
_UN = r"(?:un |una |el |la |mi |l')?"
_TEN = (  # "10", "10/10", "diez" as a whole grade: not "10 minutes"
    r"(?:10|ten|diez|deu)(?:\s*/\s*10| (?:out of|sobre|de) 10)?"
    r"(?=\s*(?:[.!,;:)\"']|$|(?:and|y|i|please|por|si|points|puntos|punts)\b))"
)
_TOP_EN = (
    rf"(?:{_TEN}|(?:full|maximum|max|top|highest|perfect) (?:marks?|scores?|grades?|points"
    r"|credit)|100\s*(?:%|percent)|an a\+?(?![\w+])|a\+)"
)
_TOP_ES = (
    rf"(?:{_TEN}|(?:nota|puntuacion|calificacion) (?:maxima|mas alta)|(?:maxima|mejor) (?:nota"
    r"|puntuacion|calificacion)|sobresaliente|matricula(?: de honor)?)"
)
_TOP_CA = (
    rf"(?:{_TEN}|(?:nota|puntuacio|qualificacio) (?:maxima|mes alta)|(?:maxima|millor) (?:nota"
    r"|puntuacio|qualificacio)|excel[.·]?lent|matricula(?: d'honor)?)"
)
_WORK_EN = r"(?:\w+ )?(?:essay|submission|work|paper|assignment|answer|project|report|code|text)"
_WORK_ES = r"(?:\w+ )?(?:trabajo|ensayo|redaccion|examen|entrega|respuesta|practica|proyecto)"
_WORK_CA = r"(?:\w+ )?(?:treball|assaig|redaccio|examen|lliurament|resposta|practica|projecte)"
_AI = (  # followed by punctuation or a grading word: "the AI community" is not addressed
    r"(?:ai|ia|llm|language model|modelo de lenguaje|model de llenguatge|chatgpt|gpt|claude"
    r"|gemini|copilot|(?:ai|automated|automatic) (?:grader|evaluator|assistant)|grading (?:ai"
    r"|model|system|bot)|corrector automatic[oa]?|intel[.·]?l?igencia artificial)"
    r"(?=\s*[,.:;!)-]|\s*$| (?:grader|grading|reading|evaluating|marking|que|who|which)\b)"
)
_ROLE_ES = r"(?:corrector|correctora|evaluador|evaluadora|examinador|ia|modelo|asistente)"
_ROLE_CA = r"(?:corrector|correctora|avaluador|avaluadora|examinador|ia|model|assistent)"

_IGNORE = _words(
    r"\b(?:ignore|disregard|forget|override|bypass|discard|do not follow|don't follow"
    rf"|set aside) {_FILL_EN}(?:(?:previous|prior|above|earlier|preceding|former|original"
    r"|initial|system) (?:instructions?|prompts?|directions?|directives?|commands?|rules"
    r"|guidance|messages?)\b|(?:instructions?|prompts?|directions?) (?:above|before|you (?:were"
    r"|have been) given)|(?:everything|anything) (?:above|before|previously)|rubric\b"
    r"|(?:grading|marking|assessment|evaluation) (?:criteria|guidelines|scheme|rubric)"
    r"|above(?=\s*[.,;:!]| (?:and|then)\b))",
    r"\b(?:ignora|ignorad|ignoren|olvida|olvidad|olviden|omite|descarta|haz caso omiso (?:a|de)"
    rf"|no hagas caso (?:a|de)) {_FILL_ES}(?:(?:instrucciones|indicaciones|ordenes|reglas"
    r"|normas|consignas|prompts?) (?:anteriores|previas|de arriba|iniciales|originales|del"
    r" sistema)|(?:prompt|mensaje) (?:anterior|del sistema)|lo anterior|rubrica|criterios de"
    r" (?:evaluacion|correccion|calificacion))",
    rf"\b(?:ignora|ignoreu|oblida|oblideu|omet|ometeu|descarta|no facis cas (?:a|de)) {_FILL_CA}"
    r"(?:(?:instruccions|indicacions|ordres|regles|normes|consignes|prompts?) (?:anteriors"
    r"|previes|de dalt|inicials|originals|del sistema)|(?:prompt|missatge) (?:anterior|del"
    r" sistema)|anterior\b|rubrica|criteris (?:d'avaluacio|de correccio|de qualificacio))",
)
_ASK_GRADE = _words(
    r"\b(?:give|award|assign|grant) (?:me|us|it|this \w+|the (?:student|author|submission"
    rf"|essay)) (?:an? |the )?{_TOP_EN}",
    rf"\b(?:grade|score|mark|rate) (?:this|my|the) {_WORK_EN} (?:as |with |at )?(?:an? )?{_TOP_EN}",
    rf"\b(?:pon|ponga|pongan|da|de|den|otorga|asigna)(?:me|le|nos) {_UN}{_TOP_ES}",
    rf"\b(?:califica|puntua|evalua|corrige) (?:este|esta|mi) {_WORK_ES} (?:con )?{_UN}{_TOP_ES}",
    rf"\b(?:posa|posi|dona|doni|atorga|assigna)(?:'m|-me|-li|'ns|-nos|m)\s*{_UN}{_TOP_CA}",
    r"\b(?:qualifica|puntua|avalua|corregeix) (?:aquest|aquesta|el meu|la meva)"
    rf" {_WORK_CA} (?:amb )?{_UN}{_TOP_CA}",
)
_NEW_ROLE = _words(
    r"\byou are (?:now|no longer) (?:an? |the |my |in )?(?:\w+ ){0,2}?(?:grader|marker|teacher"
    r"|examiner|evaluator|assistant|ai|model|chatbot|dan|mode|bound|restricted|jailbroken"
    r"|unrestricted)\b",
    r"\bfrom now on,? you (?:are (?:an?|the|my)|will (?:act|be|behave|grade|give|respond"
    r"|answer|ignore)|must)\b",
    r"\b(?:act|behave) as (?:if you (?:are|were) )?(?:an? |the |my )?(?:\w+ )?(?:grader|examiner"
    r"|evaluator|ai|dan)\b",
    r"\bas (?:the|an?|my) (?:ai )?(?:grader|marker|examiner|evaluator|assessor|corrector"
    r"|assistant|ai|llm|model|language model)\s*,? you (?:must|should|will|shall|have to"
    r"|need to|are (?:required|instructed|expected) to)\b",
    rf"\b(?:ahora|a partir de ahora,?) eres {_UN}(?:\w+ ){{0,2}}?(?:{_ROLE_ES}|profesora?|dan)\b",
    rf"\bcomo {_UN}{_ROLE_ES}\s*,? (?:debes|tienes que|deberas|has de)\b",
    rf"\b(?:ara|a partir d'ara,?) ets {_UN}(?:\w+ ){{0,2}}?(?:{_ROLE_CA}|professora?|dan)\b",
    rf"\bcom a {_ROLE_CA}\s*,? (?:has de|hauras de|et cal)\b",
)
_ADDRESS_AI = _words(
    rf"\b(?:note|message|instructions?|attention|reminder) (?:to|for) (?:the |any )?{_AI}",
    rf"\b(?:nota|mensaje|instrucciones|atencion|aviso) (?:para|a) (?:la |el )?{_AI}",
    rf"\b(?:nota|missatge|instruccions|atencio|avis) (?:per a|per|a) (?:la |el |l')?{_AI}",
    rf"\b(?:dear|hey|hi|hello|querida|querido|hola|estimada|estimado|benvolguda|benvolgut"
    rf"|estimat) {_AI}",
    rf"\b(?:if you are|si eres|si ets) (?:an? |the |una? |el |la |l')?{_AI}",
)
_CONTROL_TEXT = _words(
    r"<\|?(?:im_start|im_end|system|assistant|endoftext|eot_id|start_header_id|end_header_id"
    r"|begin_of_text)\|?>|\[/?inst\]|<</?sys>>|</?(?:system|sys|system[_-]?prompt)>",
    r"^[^\S\n]*#{2,4}[^\S\n]*(?:instruction|system(?: prompt)?)[^\S\n]*:?[^\S\n]*$",
    r"\b(?:new|updated|real|actual|hidden|secret) system prompt\b|\bsystem prompt\s*:",
    r"\b(?:begin|end)(?: of)? (?:the )?system prompt\b",
    r"\b(?:reveal|print|show|repeat|output) (?:your|the) system prompt\b",
)
_MARK = (  # at the start of a line, after list or Markdown decoration
    r"^[\t >*#_|-]{0,8}(?:(?:(?:final|total|overall)[\t ]+)?(?:score|grade|mark)s?|(?:nota"
    r"|puntuacion|calificacion|qualificacio|puntuacio)(?:[\t ]+(?:final|total|global))?)"
)
_FINAL_MARK = (
    r"^[\t >*#_|-]{0,8}(?:final[\t ]+(?:score|grade|mark)|(?:nota|puntuacion|calificacion"
    r"|qualificacio|puntuacio)[\t ]+final)"
)
_VALUE = r"[\t *_]{0,4}[:=][\t *_]{0,4}\d{1,3}(?:[.,']\d{1,2})?"
_SCORE_LINE = re.compile(  # "Grade: 8/10" anywhere; "Final score: 10" only as a whole line
    rf"{_MARK}{_VALUE}[\t ]*(?:/|out[\t ]+of|sobre|de)[\t ]*\d{{1,3}}\b"
    rf"|{_FINAL_MARK}{_VALUE}[\t *_.!]*$",
    re.MULTILINE,
)
_SELF_GRADE = _words(
    rf"\bthis {_WORK_EN} (?:deserves|merits|should (?:get|receive|be given))"
    rf" (?:an? |the )?{_TOP_EN}",
    rf"\b(?:este|esta|mi) {_WORK_ES} (?:se )?(?:merece|deberia (?:tener|sacar)|vale)"
    rf" {_UN}{_TOP_ES}",
    rf"\b(?:aquest|aquesta|el meu|la meva) {_WORK_CA} (?:es )?(?:mereix|hauria de (?:tenir"
    rf"|treure)|val) {_UN}{_TOP_CA}",
)
_PHRASES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("PromptInjection", "tell the AI grader to ignore its instructions or the rubric", _IGNORE),
    ("PromptInjection", "ask the AI grader for a particular grade", _ASK_GRADE),
    ("PromptInjection", "give the AI grader a new role", _NEW_ROLE),
    ("PromptInjection", "address the AI grader directly", _ADDRESS_AI),
    ("PromptInjection", "imitate chat-model control text or a system prompt", _CONTROL_TEXT),
    ("ScoreClaim", "looks like a grade written into the submission", _SCORE_LINE),
    ("ScoreClaim", "claims a grade for the submission", _SELF_GRADE),
)
_DISCUSSION = _words(
    r"prompt injection|jailbreak|inyeccion de (?:prompts?|instrucciones)"
    r"|injeccio de (?:prompts?|instruccions)"
)
# What may precede an imperative: the start of a clause, or a softener ("please", "ahora", ...).
_CLAUSE_START = _words(
    r"(?:^|[^\w\s'-]|\b(?:please|now|just|simply|also|so|then|and|kindly|you (?:must|should"
    r"|will|need to|have to)|por favor|ahora|tambien|simplemente|debes|tienes que|si us plau"
    r"|ara|tambe|simplement|has de))\s*$"
)


def strip_invisible(text: str) -> str:
    """The text without zero-width, bidi and tag characters: what the model is sent."""
    return _INVISIBLE.sub("", text)


def inspect(text: str) -> list[SafetyFlag]:
    """Flags for the teacher, at most ``MAX_FLAGS``, one per distinct evidence; never edits."""
    found: dict[tuple[str, str], SafetyFlag] = {}
    for flag in _flags(text):
        found.setdefault((flag.code, flag.evidence.casefold()), flag)
        if len(found) == MAX_FLAGS:
            break
    return list(found.values())


def _flags(text: str) -> Iterator[SafetyFlag]:
    hidden = " ".join(_TAG_RUN.findall(text)).translate(_TAG_TO_ASCII)
    yield from _hidden_text(text, hidden)
    yield from _phrases(text, hidden=False)
    if hidden.strip():
        yield from _phrases(hidden, hidden=True)


def _hidden_text(text: str, tag_text: str) -> Iterator[SafetyFlag]:
    removed = " They are removed before grading."
    for pattern, what in (
        (_ZERO_WIDTH, "zero-width character(s) that can split words so that filters miss them"),
        (_BIDI, "bidirectional control character(s) that make text show in another order"),
    ):
        if first := pattern.search(text):
            count = pattern.subn("", text)[1]
            snippet = text[max(0, first.start() - 30) : first.end() + 30]
            yield SafetyFlag("HiddenText", f"{count} {what}.{removed}", _render(snippet))
    if tag_text.strip():
        message = "Unicode tag characters hide text that a model can read but a person cannot."
        yield SafetyFlag("HiddenText", message + removed, _render(tag_text))
    for m in _BLANK_RUN.finditer(text):
        run = m.group()
        if run.count("\n") >= 100 or len(run) - run.rfind("\n") - 1 >= 200:
            message = "Text is pushed out of view by a long run of blank space; the model reads it."
            yield SafetyFlag("HiddenText", message, _render(text[m.start() : m.end() + 80]))
            return


def _phrases(text: str, *, hidden: bool) -> Iterator[SafetyFlag]:
    folded = _Folded(text)
    discussed = not hidden and _DISCUSSION.search(folded.text) is not None
    for code, label, pattern in _PHRASES:
        seen: set[str] = set()
        for m in pattern.finditer(folded.text):
            key = " ".join(m.group().split())
            if key in seen:
                continue
            seen.add(key)
            original = text[folded.orig(m.start()) : folded.orig(m.end())]
            disguised = _disguised(original)
            if code == "ScoreClaim":
                message = f"Text that {label}; an AI grader may take it as its verdict."
            elif (
                hidden
                or disguised
                or not (discussed or _quoted_or_mid_sentence(folded.text, m.start()))
            ):
                message = f"The submission seems to {label}. Check the grade by hand."
            else:
                message = (
                    f"Text that could {label}. It may be a quotation or part of a discussion "
                    "(e.g. an essay on AI safety) rather than an attack; check it in context."
                )
            if disguised:
                message += " It is disguised with invisible, lookalike or stylised characters."
            yield SafetyFlag(code, ("Hidden text: " if hidden else "") + message, _render(original))
            if len(seen) == _PER_PATTERN:
                break


def _quoted_or_mid_sentence(folded: str, start: int) -> bool:
    line = folded[max(folded.rfind("\n", 0, start) + 1, start - 200) : start]
    if line.count('"') % 2 or line.count("`") % 2:
        return True
    return _CLAUSE_START.search(line) is None


def _disguised(original: str) -> bool:
    """Invisible characters, or letters that only look Latin (Cyrillic "о", fullwidth "ｉ")."""
    return _INVISIBLE.search(original) is not None or any(
        c.isalpha()
        and not c.isascii()
        and (
            unicodedata.normalize("NFKC", c) != c
            or c.casefold().translate(_LOOKALIKES) != c.casefold()
        )
        for c in original
    )


def _render(snippet: str, limit: int = 120) -> str:
    shown = _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", snippet[: 4 * limit])
    shown = " ".join(_LONG_BLANK.sub(lambda m: f" <{len(m.group())} blanks> ", shown).split())
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


_PLACEHOLDER = re.compile(r"(\[(?:email|phone|id|name)\])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-zA-Z]{2,}(?![\w-])")
_DNI = re.compile(
    r"(?<![\w.-])(?:\d{8}|\d{2}\.\d{3}\.\d{3}|[XYZ]-?\d{7})-?[TRWAGMYFPDXBNJZSQVHLCKE](?![\w-])"
)
_LABELED_ID = re.compile(
    r"\b(?:student[ \t]+(?:id|number|no\.?)|id(?:[ \t]+(?:number|no\.?))?|niu|nia|dni|nie"
    r"|matr[ií]cula|expediente?|n[uú]m(?:ero|\.)?[ \t]+(?:de[ \t]+(?:estudiante|alumn[oa]"
    r"|matr[ií]cula|expediente)|d'(?:estudiant|alumne|expedient)))[ \t]*(?:[:#=]|n[º°o]\.?)?"
    r"[ \t]*(\d{7,10})(?![\w.,/-]?\d|\w)",
    re.IGNORECASE,
)
# A run of digit groups with single separators; _is_phone decides what it is.
_PHONE = re.compile(
    r"(?<![\w+.,/@=-])(?<!\d\()(?=[\d()+ .-]{8})(?:\+|\((?=\d+\)))?\d+(?:(?:[ .-]\(?|\) ?)\d+)*"
    r"(?![\w@/%]|[.,:]\d)"
)
_DIGITS = re.compile(r"\d+")
_UNIT_AFTER = re.compile(r"\s?[%€$£]")
_ES_SHAPES = {(9,), (3, 3, 3), (3, 2, 2, 2), (2, 3, 2, 2)}
_UK_SHAPES = {(3, 4, 4), (4, 3, 4), (4, 3, 3), (5, 6), (5, 3, 3)}


def _is_phone(m: re.Match[str]) -> bool:
    """Known phone layouts only, so dates, scores, versions, ISBNs and amounts stay."""
    groups = _DIGITS.findall(m.group())
    digits, shape = "".join(groups), tuple(map(len, groups))
    if _UNIT_AFTER.match(m.string, m.end()) or set(groups[1:]) == {"000"}:
        return False
    if m.group().startswith("+"):
        return 8 <= len(digits) <= 15
    if digits.startswith("00"):
        return 11 <= len(digits) <= 15 and len(groups) > 1
    if "." in m.group() and all(len(g) == 3 for g in groups[1:]):
        return False  # 612.345.678 is an amount with thousands separators
    if digits[0] in "6789" and len(digits) == 9:
        return shape in _ES_SHAPES
    if digits[0] == "0":
        return shape in _UK_SHAPES or (shape == (11,) and digits.startswith("07"))
    return shape == (3, 3, 4) and digits[0] != "1" or shape == (1, 3, 3, 4) and digits[0] == "1"


def mask_pii(
    text: str,
    *,
    names: Sequence[str] = (),
    patterns: Sequence[str] = (),
    emails: bool = True,
    phones: bool = True,
    ids: bool = True,
    kind: str = "text",
) -> tuple[str, MaskingReport]:
    """Replace personal data with placeholders, keeping line breaks and punctuation.

    ``names`` (the launch's name, given and family names) match whole words, ignoring case and
    accents. ``patterns`` are extra student-id regexes; they are trusted configuration, so their
    speed is theirs. Numbers (phones, ids, ``patterns``) are masked only when ``kind`` is one of
    ``PROSE_KINDS``. Masking twice gives the same text: placeholders are never matched again.
    """
    counts = dict.fromkeys(("email", "phone", "id", "name"), 0)
    numbers = kind in PROSE_KINDS
    steps: list[Callable[[str], str]] = []
    if emails:
        steps.append(_regex_step(_EMAIL, "email", counts))
    if ids and numbers:
        steps += [_regex_step(_DNI, "id", counts), _regex_step(_LABELED_ID, "id", counts, group=1)]
        steps += [_regex_step(re.compile(p), "id", counts) for p in patterns]
    if phones and numbers:
        steps.append(_regex_step(_PHONE, "phone", counts, accept=_is_phone))
    if name_pattern := _names_pattern(names):
        steps.append(lambda piece: _mask_names(piece, name_pattern, counts))
    for step in steps:
        pieces = _PLACEHOLDER.split(text)  # placeholders at odd indices stay as they are
        pieces[::2] = [step(piece) for piece in pieces[::2]]
        text = "".join(pieces)
    return text, MaskingReport(counts)


def _regex_step(
    pattern: re.Pattern[str],
    label: str,
    counts: dict[str, int],
    *,
    group: int = 0,
    accept: Callable[[re.Match[str]], bool] | None = None,
) -> Callable[[str], str]:
    def replace(m: re.Match[str]) -> str:
        if not m.group(group) or (accept and not accept(m)):
            return m.group()
        counts[label] += 1
        whole, start, end = m.group(), m.start(group) - m.start(), m.end(group) - m.start()
        return f"{whole[:start]}[{label}]{whole[end:]}"

    return lambda piece: pattern.sub(replace, piece)


def _names_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    folded = {" ".join(_Folded(name).text.split()) for name in names}
    longest_first = sorted((name for name in folded if len(name) >= 2), key=len, reverse=True)
    if not longest_first:
        return None
    alternatives = "|".join(r"\s+".join(map(re.escape, name.split())) for name in longest_first)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


def _mask_names(piece: str, pattern: re.Pattern[str], counts: dict[str, int]) -> str:
    folded, out, last = _Folded(piece), [], 0
    for m in pattern.finditer(folded.text):
        start, end = folded.orig(m.start()), folded.orig(m.end())
        out += [piece[last:start], "[name]" + "\n" * piece.count("\n", start, end)]
        last = end
        counts["name"] += 1
    return "".join(out) + piece[last:]
