"""Reading the answer out of a model's response (:func:`extract_answer`), as every actor,
reward and evidence score does.

``auto`` (the default) reads what vision-language models write: it drops reasoning blocks,
takes the answer the response marks most clearly (``\\boxed{}``, then ``<answer>`` tags,
then an answer lead-in such as ``The answer is``, then the final line; the last of each),
and cleans it of markdown, LaTeX wrappers, lead-ins, quotes and trailing punctuation. What
a scorer reads is left to it (``45%``, ``$12``, ``1,327.7``, ``(B) 12``); what would make
a number unreadable to every scorer (``0.59 million``, ``about 12``, ``12 cm``) is cut
from it. The strict modes (``boxed``, ``answer``, ``final_line``, ``full``,
``regex:PATTERN``) read one form only and return ``""`` when it is absent. docs/evolve.md
lists them with examples.
"""

from __future__ import annotations

import re

EXTRACTORS = ("auto", "boxed", "answer", "final_line", "full")
_ANSWER_LINE = re.compile(r"answer\s*[:：]\s*(.+)", re.IGNORECASE)

#: reasoning blocks as (opening, closing) tags: what lies inside is not the answer
REASONING_TAGS = (("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<reasoning>", "</reasoning>"),
                  ("<|begin_of_thought|>", "<|end_of_thought|>"), ("◁think▷", "◁/think▷"))
#: wrappers around the answer part of a reply, dropped with the text they hold kept
_SOLUTION_TAGS = ("<|begin_of_solution|>", "<|end_of_solution|>")
#: the longest line the sentence rules read (a longer one is taken as it is)
_SENTENCE_LIMIT = 400
#: the longest answer cleaned (a longer one, no answer a scorer gives credit, is taken as it is)
_ANSWER_LIMIT = 1000

_LEAD = re.compile(
    r"(?:\b(?:final\s+|correct\s+|short\s+|my\s+)?answer\b\s*(?:is\s*[:：]?|[:：=]|\s[-–—]\s|would\s+be|should\s+be"
    r"|will\s+be)|\b(?:correct|right|best)\s+(?:option|choice)\s+is\b\s*:?|答案\s*[:：是为])\s*",
    re.IGNORECASE)
_HEADING = re.compile(r"^(?:the\s+)?(?:final\s+|correct\s+|short\s+)?answer\s*[:：]?$", re.IGNORECASE)
_CONNECTIVE = re.compile(
    r"^(?:so|thus|therefore|hence|consequently|overall|in\s+conclusion|in\s+summary|in\s+short|to\s+sum\s+up)\b"
    r"\s*[,:]?\s*", re.IGNORECASE)
_COPULA = re.compile(r"^((?:[^\s]+\s+){0,12}?)(?:is|are|was|were|equals|would\s+be|will\s+be|=)\s+(.+)$",
                     re.IGNORECASE)
_CLAUSE = re.compile(
    r"(?:,\s*|\s+)(?:which|because|since|as\s+(?:shown|seen|indicated)|according\s+to|based\s+on|indicating|meaning"
    r"|showing|while|whereas)\b.*$", re.IGNORECASE | re.DOTALL)
_ABBREVIATIONS = {"dr", "mr", "mrs", "ms", "st", "no", "inc", "co", "ltd", "jr", "sr", "vs", "etc", "approx", "ca",
                  "e.g", "i.e", "u.s", "fig", "p", "pp", "vol", "dept", "corp", "ave", "rd"}
_SENTENCE_END = re.compile(r"([^\s]*?)[.!?。！？]+(?:\s+|$)")

_NUM = r"[-+−]?[$€£¥₹]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s?%?"
_CURRENCY = re.compile(rf"^(?:US\$|USD|EUR|GBP|[€£¥₹])\s?({_NUM})$", re.IGNORECASE)
_HEDGE = re.compile(rf"^(?:approximately|approx\.?|about|around|roughly|nearly|almost|close\s+to|circa|ca\.|~|≈"
                    rf"|\\approx|\\sim)\s*({_NUM}.*)$", re.IGNORECASE)
_UNIT_WORD = r"(?:[^\W\d_]|[°µ])[^\s\d]*"
_WITH_UNIT = re.compile(rf"^({_NUM})\s*(?:{_UNIT_WORD}(?:\s+{_UNIT_WORD}){{0,2}}|\([^()]*\))$")
#: words after a number that make it more than a number with its unit ("3 or 4", "2 out of 5")
_NOT_UNITS = {"or", "and", "to", "than", "of", "out", "from", "vs", "vs.", "versus", "plus", "minus", "between",
              "times", "x", "-", "–", "more", "less", "fewer", "higher", "lower", "greater", "smaller", "bigger",
              "larger", "is", "are", "was", "were", "but", "not", "in", "on", "at", "for", "by", "with"}
_YES_NO = re.compile(r"^(yes|no)\s*[,.;:!—–-]\s*\S", re.IGNORECASE)
_OPTION = re.compile(r"^(?:option|choice)\s*[:\s]\s*(\(?[A-Za-z]\)?(?:[.:)\s].*)?)$", re.IGNORECASE)
_QUOTES = (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"), ("「", "」"))

_MARKDOWN = (
    (re.compile(r"\*\*(.+?)\*\*"), r"\1"),
    (re.compile(r"__(.+?)__"), r"\1"),
    (re.compile(r"`+([^`]+?)`+"), r"\1"),
    (re.compile(r"(?<![\w*\\])\*(?=\S)([^*\n]*?)(?<=\S)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w\\])_(?=\S)([^_\n]*?)(?<=\S)_(?!\w)"), r"\1"),
)
_BLOCK_MARKS = re.compile(r"^(?:#{1,6}\s+|>\s*|[-*+•]\s+)+")
_LATEX_WRAPS = (re.compile(r"^\$\$(.+)\$\$$", re.DOTALL), re.compile(r"\\\[(.+?)\\\]", re.DOTALL),
                re.compile(r"\\\((.+?)\\\)", re.DOTALL))
_INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?=[^\s$])([^$]*?)(?<=[^\s\\$])\$(?![\d$])")
_LATEX_TEXT = re.compile(
    r"\\(?:text|textbf|textit|textrm|textsf|texttt|mathrm|mathbf|mathit|mathsf|mathtt|mbox|operatorname|boxed|fbox)"
    r"\s*\{([^{}]*)\}")
_LATEX_SYMBOLS = ((re.compile(r"(?<=\d)(?:\\,|\{,\})(?=\d{3})"), ","), (re.compile(r"\\([%$&#_])"), r"\1"),
                  (re.compile(r"\\[,;:! ]|~"), " "), (re.compile(r"\^\s*\{?\\circ\}?"), "°"))


def _boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (braces nested), or ``None``."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    return _braced(text, start + len("\\boxed{"))


def _braced(text: str, i: int) -> str | None:
    """The text from ``i`` to the brace that closes the one before it, or ``None``."""
    depth = 1
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j]
    return None


def _last_boxed(text: str) -> str | None:
    """The content of the last closed ``\\boxed{}`` or ``\\fbox{}``, or ``None`` (braces
    matched in one pass, so a reply of many unclosed ones takes linear time)."""
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if not starts:
        return None
    closes: dict[int, int] = {}
    opened: list[int] = []
    for brace in re.finditer(r"[{}]", text):
        if brace.group() == "{":
            opened.append(brace.start())
        elif opened:
            closes[opened.pop()] = brace.start()
    for start in reversed(starts):
        if start - 1 in closes:
            return text[start:closes[start - 1]]
    return None


def _find_last(low: str, tag: str) -> int:
    return low.rfind(tag.lower())


def drop_reasoning(text: str) -> str:
    """``text`` without its reasoning: for each style of :data:`REASONING_TAGS`, what comes
    before its last closing tag (the block, or reasoning a chat template opened) goes; an
    opening tag never closed goes alone (a reply cut off while thinking keeps its text)."""
    for opening, closing in REASONING_TAGS:
        end = _find_last(text.lower(), closing)
        if end >= 0:
            text = text[end + len(closing):]
        text = re.sub(re.escape(opening), "\n", text, flags=re.IGNORECASE)
    for tag in _SOLUTION_TAGS:
        text = text.replace(tag, "\n")
    return text


def _answer_tag(text: str) -> str | None:
    """The content of the last ``<answer>...</answer>`` (or of an ``<answer>`` left open)."""
    low = text.lower()
    start = low.rfind("<answer>")
    if start < 0:
        return None
    start += len("<answer>")
    end = low.find("</answer>", start)
    return text[start:] if end < 0 else text[start:end]


def _unmark_line(line: str) -> str:
    """A line without its markdown: emphasis, code spans, headings, quotes and bullets."""
    line = _BLOCK_MARKS.sub("", line.strip())
    for pattern, repl in _MARKDOWN:
        line = pattern.sub(repl, line)
    return line.strip()


def _lead_in(text: str) -> str | None:
    """What follows the last answer lead-in (``Answer:``, ``The answer is``, ``Final answer:``,
    a heading ``Final Answer`` with the answer on the next line), or ``None``."""
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if "answer" not in lines[i].lower() and "答案" not in lines[i]:
            continue
        line = _unwrap(lines[i][-_ANSWER_LIMIT:])
        matches = list(_LEAD.finditer(line))
        after = line[matches[-1].end():].strip() if matches else None
        if after is None and _HEADING.match(line):
            after = ""
        if after is None:
            continue
        if not _clean(after):  # a heading: the answer is on the next line
            rest = [x for x in lines[i + 1:] if x.strip()]
            if not rest:
                continue
            after = rest[0]
        return _first_sentence(after)
    return None


def _first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (a full stop after an abbreviation,
    or between digits, ends none) and before a clause that explains it."""
    for match in _SENTENCE_END.finditer(text):
        word = match.group(1).lower().lstrip("([\"'*$\\")
        if match.end() < len(text) and word not in _ABBREVIATIONS and not re.fullmatch(r"[a-z]", word):
            text = text[:match.end()]
            break
    return _CLAUSE.sub("", text.strip())


def _final_line(text: str) -> str | None:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


def _final_sentence(line: str) -> str:
    """The answer a final line states: its last sentence when that begins with ``So``,
    ``Therefore``... and what follows the verb of a sentence such as ``the value is 0.59``
    or ``there are 3 cubes``; else the line."""
    if len(line) > _SENTENCE_LIMIT:
        return line
    line = _unmark_line(line)
    if _YES_NO.match(line):
        return line
    sentences = [m.start() for m in re.finditer(r"(?<=[.!?])\s+(?=\S)", line)]
    for start in reversed(sentences):
        tail = line[start:].strip()
        if _CONNECTIVE.match(tail):
            line = tail
            break
    said = _CONNECTIVE.sub("", line, count=1)
    connected = said != line
    said = _CLAUSE.sub("", said).strip()
    sentence = connected or len(said.split()) >= 3
    match = _COPULA.match(said.rstrip(".!? ")) if sentence else None
    if match and not re.search(r"[\\$`{]", match.group(1)):
        return match.group(2)
    return said if connected else line


def _strip_quotes(text: str) -> str:
    """``text`` without quotes around it, or a quote at one end that none in it pairs."""
    for left, right in _QUOTES:
        if len(text) >= 2 and text.startswith(left) and text.endswith(right):
            return text[len(left):-len(right)]
        if text.endswith(right) and left not in text.rstrip(right):
            return text.rstrip(right)
        if text.startswith(left) and right not in text.lstrip(left):
            return text.lstrip(left)
    return text


def _unlatex(text: str) -> str:
    """``text`` without LaTeX wrappers (math delimiters, ``\\text{}`` and kin, escapes)."""
    for _ in range(6):  # wrappers in wrappers: \text{\(...\)}
        before = text
        for pattern in _LATEX_WRAPS:
            text = pattern.sub(r"\1", text.strip())
        text = _INLINE_MATH.sub(r"\1", text)
        text = _LATEX_TEXT.sub(r"\1", text)
        for pattern, repl in _LATEX_SYMBOLS:
            text = pattern.sub(repl, text)
        if text == before:
            break
    return text


def _number_only(text: str) -> str:
    """A number with a unit, a hedge or a currency code in front as the number alone:
    ``0.59 million``, ``12 cm``, ``about 12``, ``€12``, ``45 %`` (``45%`` and ``$12`` are
    kept: the scorers read them)."""
    hedge = _HEDGE.match(text)
    if hedge:
        text = hedge.group(1)
    currency = _CURRENCY.match(text)
    if currency:
        text = currency.group(1)
    match = _WITH_UNIT.match(text)
    if match and match.group(0) != match.group(1):
        words = text[match.end(1):].lower().split()
        if not any(w in _NOT_UNITS for w in words):
            text = match.group(1)
    return re.sub(r"\s+%$", "%", text.strip())


def _unwrap(text: str) -> str:
    """``text`` without the markdown, LaTeX, quotes and answer tags around or in it."""
    for _ in range(6):
        before = text
        text = _unmark_line(" ".join(text.split()))
        text = re.sub(r"^[*_`]+(?=\S)|(?<=\S)[*_`]+$", "", text)  # marks left unpaired (nested bold, code)
        text = _unlatex(text).strip()
        text = re.sub(r"^<answer>(.*)</answer>$", r"\1", text, flags=re.IGNORECASE)
        text = _strip_quotes(text).strip()
        if text == before:
            break
    return text


def _clean_once(text: str) -> str:
    text = _unwrap(text)
    text = _CONNECTIVE.sub("", text, count=1)
    lead = list(_LEAD.finditer(text))
    if lead and re.fullmatch(r"(?:the\s+)?", text[:lead[0].start()], re.IGNORECASE):
        text = text[lead[-1].end():]
    text = re.sub(r"^[:：]\s*|[\s.,;:!?。！？]+$", "", text).strip()
    option = _OPTION.match(text)
    if option:
        text = option.group(1)
    yes_no = _YES_NO.match(text)
    if yes_no:
        text = yes_no.group(1)
    return _number_only(text)


def _clean(text: str) -> str:
    """The answer in ``text`` cleaned until nothing more comes off."""
    if len(text) > _ANSWER_LIMIT:
        return text.strip().rstrip(".").strip()
    for _ in range(8):
        cleaned = _clean_once(text)
        if cleaned == text:
            break
        text = cleaned
    return text


def _auto(text: str) -> str:
    text = drop_reasoning(text)
    boxed = _last_boxed(text)
    if boxed is not None and _clean(boxed):
        return _clean(boxed)
    tagged = _answer_tag(text)
    if tagged is not None and _clean(tagged):
        text = tagged
    lead = _lead_in(text)
    if lead is not None and _clean(lead):
        return _clean(lead)
    line = _final_line(text)
    return "" if line is None else _clean(_final_sentence(line))


def extract_answer(text: str, how: str = "auto") -> str:
    """The answer in a model's response, read the way ``how`` names:

    - ``auto``: reasoning blocks (:data:`REASONING_TAGS`) dropped, then the last
      ``\\boxed{}``, else the last ``<answer>`` tag's content, else what follows the last
      answer lead-in (``Answer:``, ``The answer is``, ``Final answer:``), else the final
      line (its last sentence when that begins with ``So``/``Therefore``..., what follows
      the verb of ``the value is 0.59``); cleaned of markdown, LaTeX wrappers
      (``$...$``, ``\\(...\\)``, ``\\text{}``), lead-ins, quotes, trailing punctuation, a
      ``Yes,``/``No,`` sentence's rest, and of a unit, hedge or currency code around a
      number (``0.59 million``, ``about 12``, ``12 cm``; ``45%`` and ``$12`` are kept);
    - ``boxed``: the last ``\\boxed{}``; ``answer``: the last ``Answer: ...`` line;
      ``final_line``: the last non-empty line; ``full``: all of it; ``regex:PATTERN``:
      the last match's first group, else the whole match. These strict modes give ``""``
      when their form is absent, and drop only surrounding spaces and a final full stop.

    An unknown ``how`` raises ``ValueError``."""
    text = str(text or "")
    found: str | None
    if how.startswith("regex:"):
        match = list(re.finditer(how[len("regex:"):], text, re.DOTALL))
        found = None if not match else (match[-1].group(1) if match[-1].groups() else match[-1].group(0))
    elif how == "boxed":
        found = _boxed(text)
    elif how == "answer":
        lines = [m.group(1) for m in (_ANSWER_LINE.search(line) for line in text.splitlines()) if m]
        found = lines[-1] if lines else None
    elif how == "final_line":
        found = _final_line(text)
    elif how == "full":
        found = text
    elif how == "auto":
        return _auto(text)
    else:
        raise ValueError(f"expected an answer extractor in {EXTRACTORS} or 'regex:PATTERN', got {how!r}")
    return (found or "").strip().rstrip(".").strip()


__all__ = ["EXTRACTORS", "REASONING_TAGS", "drop_reasoning", "extract_answer"]
