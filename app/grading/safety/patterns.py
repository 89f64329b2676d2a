"""The tables the safety checks match against: hidden characters, lookalike letters, the
phrases that try to instruct, address or re-role the AI grader (English, Spanish, Catalan),
written-in grades, and the shapes of personal data.

Injection and score-claim patterns run on folded text (:mod:`app.grading.safety.folding`),
so they are written in lower case without accents; a space in a :func:`_words` phrase
matches any run of blanks. Every pattern is linear: no nested unbounded repetition, and
runs are only tried from their start.
"""

from __future__ import annotations

import re
import string

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
    r"^[^\S\n]*#{2,4}[^\S\n]*(?:instruction|system(?: prompt)?)[^\S\n]*(?::[^\S\n]*)?$",
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

_PLACEHOLDER = re.compile(r"(\[(?:email|phone|id|name)\])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-zA-Z]{2,}(?![\w-])")
_DNI = re.compile(
    r"(?<![\w.-])(?:\d{8}|\d{2}\.\d{3}\.\d{3}|[XYZ]-?\d{7})-?[TRWAGMYFPDXBNJZSQVHLCKE](?![\w-])"
)
_LABELED_ID = re.compile(
    r"\b(?:student[ \t]+(?:id|number|no\.?)|id(?:[ \t]+(?:number|no\.?))?|niu|nia|dni|nie"
    r"|matr[ií]cula|expediente?|n[uú]m(?:ero|\.)?[ \t]+(?:de[ \t]+(?:estudiante|alumn[oa]"
    r"|matr[ií]cula|expediente)|d'(?:estudiant|alumne|expedient)))"
    r"[ \t]*(?:(?:[:#=]|n[º°o]\.?)[ \t]*)?(\d{7,10})(?![\w.,/-]?\d|\w)",
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
