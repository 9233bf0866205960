"""Format constraint types: whole-response formats (JSON, YAML, XML, a choice, two
responses, a bare list) and layouts (tables, lists, sections, steps, titles, code blocks,
quoted and labelled lines), punctuation and number formats, bold and italic spans."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from vicogym.programs.instruct.contracts import WHOLE_LIST, WHOLE_RESPONSE, Verdict, constraint, layout, only_on
from vicogym.programs.instruct.text import (
    COUNT,
    RELATION,
    TEXT,
    WORD_LIST,
    count_matches,
    counted,
    first_table,
    lines,
    sentences,
    strip_fence,
)

#: code and data formats fit an image that holds data (a chart's table, a scene graph), not a photo
STRUCTURED = only_on("chart", "clevr")


def _precision_fit(facts: Mapping[str, Any], decimals: int) -> str | None:
    """Numbers to ``decimals`` places fit only where the image prints numbers that precise:
    "64.000" for a chart that shows 64 makes up a precision the chart does not have."""
    shown = [str(float(r["value"])) for r in facts.get("rows") or () if "value" in r]
    most = max((len(v.partition(".")[2].rstrip("0")) for v in shown), default=0)
    return None if decimals <= most else f"the image shows numbers to {most} decimals at most, not {decimals}"


@constraint("json_format", "The whole response is valid JSON (a Markdown code fence around it is allowed).", "format",
            {}, [('{"a": 1}', {}, True), ('```json\n[1, 2]\n```', {}, True), ("a: 1", {}, False), ("", {}, False)],
            exclusive=WHOLE_RESPONSE, fit=STRUCTURED)
def _json_format(response: str) -> Verdict:
    # IFEval's unfencing: strip a leading ```json, ```Json, ```JSON, ``` (in turn) and a trailing ```
    text = response.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        text = text.removeprefix(fence)
    text = text.removesuffix("```").strip()
    try:
        json.loads(text)
        return Verdict(True, "valid JSON", "valid JSON")
    except ValueError as exc:
        return Verdict(False, "valid JSON", "not JSON", str(exc))
    except RecursionError:
        return Verdict(False, "valid JSON", "not readable JSON", "nested deeper than a JSON reader follows")


@constraint("yaml_mapping", "The whole response is a YAML mapping (a fence around it is allowed).", "format",
            {}, [("a: 1\nb: [2, 3]", {}, True), ("just words", {}, False), ("a: [1", {}, False)],
            exclusive=WHOLE_RESPONSE, fit=STRUCTURED)
def _yaml_mapping(response: str) -> Verdict:
    import yaml

    try:
        data = yaml.safe_load(strip_fence(response))
    except yaml.YAMLError as exc:
        return Verdict(False, "a YAML mapping", "not YAML", str(exc).splitlines()[0])
    except RecursionError:
        return Verdict(False, "a YAML mapping", "not readable YAML", "nested deeper than a YAML reader follows")
    except ValueError as exc:  # a scalar YAML resolves but Python will not convert (an integer of 5,000 digits)
        return Verdict(False, "a YAML mapping", "not readable YAML", str(exc).split(";")[0])
    return Verdict(isinstance(data, dict), "a YAML mapping", type(data).__name__)


@constraint("xml_document", "The whole response is one well-formed XML element.", "format",
            {}, [("<a><b>1</b></a>", {}, True), ("<a><b></a>", {}, False), ("plain", {}, False)],
            exclusive=WHOLE_RESPONSE, fit=STRUCTURED)
def _xml_document(response: str) -> Verdict:
    import xml.etree.ElementTree as ElementTree

    try:
        ElementTree.fromstring(strip_fence(response))
        return Verdict(True, "well-formed XML", "well-formed XML")
    except ElementTree.ParseError as exc:
        return Verdict(False, "well-formed XML", "not XML", str(exc))
    except UnicodeEncodeError:  # a lone surrogate: text no XML document can hold
        return Verdict(False, "well-formed XML", "not XML", "the response holds characters that are not Unicode")


@constraint("markdown_table", "A Markdown table with at least n data rows.", "format",
            {"n": COUNT}, [("| a | b |\n|---|---|\n| 1 | 2 |", {"n": 1}, True), ("| a |\n|---|", {"n": 1}, False),
                           ("no table", {"n": 1}, False)],
            exclusive=layout("markdown_table"), measure="table rows", relation="at least")
def _markdown_table(response: str, n: int) -> Verdict:
    table = first_table(response)
    if table is None:
        return Verdict(False, f"a table of at least {n} rows", "no Markdown table")
    return counted("table rows", "at least", n, len(table[1]))


def greedy_titles(response: str) -> list[str]:
    """What IFEval's ``re.findall(r"<<[^\\n]+>>")`` finds, in linear time (the regex rescans
    the rest of the line from every ``<<`` that has no ``>>`` after it): per line, from its
    first ``<<`` to its last ``>>``, when at least one character lies between."""
    found = []
    for line in response.split("\n"):
        start = line.find("<<")
        end = line.rfind(">>")
        if start != -1 and end >= start + 3:
            found.append(line[start:end + 2])
    return found


@constraint("title", "A title wrapped in double angular brackets, such as <<poem of joy>>.", "format",
            {}, [("<<A day>>\ntext", {}, True), ("A day", {}, False), ("<<>> x", {}, False)],
            exclusive=layout("title"))
def _title(response: str) -> Verdict:
    found = [t for t in greedy_titles(response) if t.lstrip("<").rstrip(">").strip()]
    return Verdict(bool(found), "a <<title>>", found[0] if found else "no title")


@constraint("highlighted_sections", "At least n sections highlighted with Markdown, *like this*.", "format",
            {"n": COUNT}, [("*one* and *two*", {"n": 2}, True), ("*one* only", {"n": 2}, False),
                           ("**bold**", {"n": 1}, True)],
            measure="highlighted sections", relation="at least")
def _highlighted(response: str, n: int) -> Verdict:
    found = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    found += [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h.removeprefix("**").removesuffix("**").strip()]
    return counted("highlighted sections", "at least", n, len(found))


@constraint("sections", "Exactly n sections (or at least / at most n, as the relation says), each starting with the "
            "splitter and its number (e.g. 'SECTION 1').", "format",
            {"n": COUNT, "splitter": TEXT, "relation": RELATION},
            [("SECTION 1\na\nSECTION 2\nb", {"n": 2, "splitter": "SECTION"}, True),
             ("SECTION 1\na", {"n": 2, "splitter": "SECTION"}, False),
             ("SECTION 1\na\nSECTION 2\nb", {"n": 1, "splitter": "SECTION"}, False),
             ("SECTION 1\na\nSECTION 2\nb", {"n": 1, "splitter": "SECTION", "relation": "at least"}, True)],
            optional=("relation",), exclusive=layout("sections"), measure="sections")
def _sections(response: str, n: int, splitter: str, relation: str = "exactly") -> Verdict:
    # IFEval's multiple_sections is this with relation "at least"
    parts = re.split(r"\s?" + re.escape(splitter) + r"\s?\d+\s?", response)
    return counted("sections", relation, n, len(parts) - 1)


@constraint("choice", "The response gives one of the given options, word for word (IFEval's constrained_response: "
            "the option appears in the response).", "format", {"options": WORD_LIST},
            [("My answer is yes.", {"options": ["My answer is yes.", "My answer is no."]}, True),
             ("My answer is no. It rains.", {"options": ["My answer is yes.", "My answer is no."]}, True),
             ("Yes.", {"options": ["My answer is yes."]}, False),
             ("my answer is yes.", {"options": ["My answer is yes."]}, False)], exclusive=WHOLE_RESPONSE)
def _choice(response: str, options: list[str]) -> Verdict:
    text = response.strip()
    found = [option for option in options if option in text]
    return Verdict(bool(found), f"one of {options}", f"gives {found[0]!r}" if found else repr(text[:80]))


@constraint("code_block", "At least one fenced code block (```), optionally in a given language.", "format",
            {"language": TEXT}, [("```python\nx = 1\n```", {"language": "python"}, True), ("x = 1", {}, False),
                                 ("```\nx\n```", {"language": "python"}, False), ("```\nx\n```", {}, True)],
            optional=("language",),
            exclusive=layout("code_block"), fit=STRUCTURED)
def _code_block(response: str, language: str | None = None) -> Verdict:
    fences = re.findall(r"```([\w+-]*)\n.*?```", response, re.DOTALL)
    ok = any(language is None or lang.lower() == language.lower() for lang in fences)
    want = f"a {language} code block" if language else "a code block"
    return Verdict(ok, want, f"code blocks in {fences}" if fences else "no code block")


@constraint("two_responses", "Two different responses separated by six asterisks (******).", "format",
            {}, [("one\n******\ntwo", {}, True), ("one\n******\none", {}, False), ("one", {}, False)],
            exclusive=WHOLE_RESPONSE)
def _two_responses(response: str) -> Verdict:
    # as IFEval: a blank part is allowed only before the first or after the last divider
    parts = [p.strip() for p in response.split("******")]
    inner_blank = any(not p for p in parts[1:-1])
    given = [p for p in parts if p]
    ok = not inner_blank and len(given) == 2 and given[0] != given[1]
    return Verdict(ok, "two different responses split by ******", f"{len(given)} parts",
                   "an empty response between dividers" if inner_blank else "")


@constraint("bullet_list", "Exactly n Markdown bullet points (lines starting with '*' or '-', counted as IFEval counts "
            "them).", "format", {"n": COUNT}, [("* a\n* b", {"n": 2}, True), ("- a\n- b\n- c", {"n": 2}, False),
                                             ("a\nb", {"n": 1}, False), ("**bold**\n* a", {"n": 1}, True)],
            exclusive=layout("bullet_list"), measure="bullet points", relation="exactly")
def _bullet_list(response: str, n: int) -> Verdict:
    # IFEval's two patterns, counted apart: '*' not followed by '*', and '-'. IFEval opens them
    # with \s*, which from every blank line rescans all the blank lines after it (quadratic in
    # a run of them); a match that \s* starts on a blank line is the one that starts on its
    # bullet's own line, so indentation without newlines counts the same, in linear time
    stars = re.findall(r"^[^\S\n]*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^[^\S\n]*-.*$", response, flags=re.MULTILINE)
    return counted("bullet points", "exactly", n, len(stars) + len(dashes))


@constraint("numbered_list", "A numbered list of n items ('1.', '2.', ... at the start of lines).", "format",
            {"n": COUNT, "relation": RELATION}, [("1. a\n2. b", {"n": 2, "relation": "exactly"}, True),
                                                 ("1. a", {"n": 2, "relation": "at least"}, False)],
            exclusive=layout("numbered_list"), measure="numbered items")
def _numbered_list(response: str, n: int, relation: str) -> Verdict:
    return counted("numbered items", relation, n, count_matches(r"^[^\S\n]*\d+[.)]\s", response))


# new format types (VISA's seed registry)
NUMBER = r"[0-9]+(?:\.[0-9]+)?"
PUNCTUATION_RULES = {"no exclamation marks": "!", "no question marks": "?", "no semicolons": ";",
                     "every sentence ends with a period": None}


@constraint("punctuation_control", "A punctuation rule holds: no exclamation marks, no question marks, no semicolons, "
            "or every sentence ends with a period (and there is at least one sentence).", "format",
            {"rule": {"type": "string", "enum": list(PUNCTUATION_RULES)}},
            [("Calm words.", {"rule": "no exclamation marks"}, True), ("Wow!", {"rule": "no exclamation marks"}, False),
             ("Why? Because.", {"rule": "no question marks"}, False), ("a; b", {"rule": "no semicolons"}, False),
             ("One. Two.", {"rule": "every sentence ends with a period"}, True),
             ("One. Two!", {"rule": "every sentence ends with a period"}, False),
             ("", {"rule": "every sentence ends with a period"}, False)],
            exclusive=("punctuation:question",))
def _punctuation_control(response: str, rule: str) -> Verdict:
    mark = PUNCTUATION_RULES[rule]
    if mark is not None:
        return counted(f"{mark!r} marks", "exactly", 0, response.count(mark))
    found = sentences(response)
    bad = [s for s in found if not s.endswith(".")]
    return Verdict(bool(found) and not bad, "every sentence ending with a period",
                   f"{len(bad)} of {len(found)} sentences not" if found else "no sentences",
                   repr(bad[0][-40:]) if bad else "")


@constraint("number_precision", "Every number (digits, optionally with a decimal point) is written with exactly d "
            "decimal places, and there is at least one number.", "format",
            {"decimals": {"type": "integer", "minimum": 0, "maximum": 6}},
            [("It costs 3.50 and weighs 2.00 kg.", {"decimals": 2}, True), ("It costs 3.5.", {"decimals": 2}, False),
             ("No numbers.", {"decimals": 0}, False), ("3 cubes, 12 spheres", {"decimals": 0}, True)],
            fit=lambda facts, params: _precision_fit(facts, params["decimals"]))
def _number_precision(response: str, decimals: int) -> Verdict:
    found = re.findall(NUMBER, response)
    bad = [x for x in found if len(x.partition(".")[2]) != decimals]
    return Verdict(bool(found) and not bad, f"every number with {decimals} decimals",
                   f"{len(bad)} of {len(found)} numbers not" if found else "no numbers",
                   f"e.g. {bad[0]!r}" if bad else "")


def _spans(pattern: str, response: str) -> list[str]:
    return [s for s in re.findall(pattern, response) if s.strip()]


BOLD = r"\*\*([^*\n]+)\*\*"
ITALIC = r"(?<!\*)\*([^*\n]+)\*(?!\*)"


@constraint("bold_count", "At least / at most / exactly n **bold** spans (double asterisks, on one line).", "format",
            {"n": COUNT, "relation": RELATION}, [("**a** and **b**", {"n": 2, "relation": "exactly"}, True),
                                                 ("**a** and *b*", {"n": 2, "relation": "at least"}, False),
                                                 ("** **", {"n": 0, "relation": "exactly"}, True)],
            measure="bold spans")
def _bold_count(response: str, n: int, relation: str) -> Verdict:
    return counted("bold spans", relation, n, len(_spans(BOLD, response)))


@constraint("italic_count",
            "At least / at most / exactly n *italic* spans (single asterisks, on one line; bold does not count).",
            "format", {"n": COUNT, "relation": RELATION},
            [("*a* and *b*", {"n": 2, "relation": "exactly"}, True),
             ("**a** and *b*", {"n": 2, "relation": "at least"}, False),
             ("*a*", {"n": 0, "relation": "at most"}, False)], measure="italic spans")
def _italic_count(response: str, n: int, relation: str) -> Verdict:
    return counted("italic spans", relation, n, len(_spans(ITALIC, response)))


@constraint("numbered_steps", "Exactly n steps, each on its own line starting 'Step i:' (i = 1, 2, ... in order).",
            "format", {"n": {"type": "integer", "minimum": 1, "maximum": 100}},
            [("Step 1: mix\nStep 2: bake", {"n": 2}, True), ("Step 1: mix\nStep 3: bake", {"n": 2}, False),
             ("Step 1: mix", {"n": 2}, False)],
            exclusive=layout("numbered_steps"), measure="steps", relation="exactly")
def _numbered_steps(response: str, n: int) -> Verdict:
    found = [int(i) for i in re.findall(r"^[ \t]*Step ([0-9]+):", response, flags=re.MULTILINE)]
    ok = found == list(range(1, n + 1))
    return Verdict(ok, f"steps 1 to {n} in order", f"steps {found}" if found else "no 'Step i:' lines")


LIST_ITEM = {"bullet": r"[ \t]*[-*] \S", "numbered": r"[ \t]*[0-9]+[.)] \S"}


@constraint("list_format", "The whole response is a list: every non-empty line is an item of the given style "
            "('- ' or '* ' bullets, or '1.' numbers), and there is at least one.", "format",
            {"style": {"type": "string", "enum": list(LIST_ITEM)}},
            [("- a\n- b", {"style": "bullet"}, True), ("1. a\n\n2) b", {"style": "numbered"}, True),
             ("Intro\n- a", {"style": "bullet"}, False), ("", {"style": "bullet"}, False),
             ("- a", {"style": "numbered"}, False)],
            exclusive=WHOLE_LIST)
def _list_format(response: str, style: str) -> Verdict:
    found = lines(response)
    bad = [line for line in found if not re.match(LIST_ITEM[style], line)]
    return Verdict(bool(found) and not bad, f"only {style} list items", f"{len(bad)} other lines" if found else "empty",
                   repr(bad[0][:40]) if bad else "")


@constraint("line_count", "At least / at most / exactly n non-empty lines.", "format",
            {"n": COUNT, "relation": RELATION}, [("a\n\nb\n", {"n": 2, "relation": "exactly"}, True),
                                                 ("a\nb\nc", {"n": 2, "relation": "at most"}, False)],
            exclusive=layout("line_count"), measure="lines")
def _line_count(response: str, n: int, relation: str) -> Verdict:
    return counted("non-empty lines", relation, n, len(lines(response)))


@constraint("blockquote", "At least n quoted lines (Markdown blockquotes: '>' at the start of a line, then text).",
            "format", {"n": COUNT}, [("> to be\n> or not", {"n": 2}, True), ("to be >", {"n": 1}, False),
                                     (">", {"n": 1}, False)],
            exclusive=layout("blockquote"), measure="quoted lines", relation="at least")
def _blockquote(response: str, n: int) -> Verdict:
    return counted("quoted lines", "at least", n,
                   len(re.findall(r"^[ \t]*>[> \t]*[^\s>]", response, flags=re.MULTILINE)))


@constraint("key_value_lines", "Every key appears as a labelled line 'Key: value' (the key at the start of a line, "
            "case-insensitive, then a colon and a value).", "format", {"keys": WORD_LIST},
            [("Name: Ada\nAge: 36", {"keys": ["name", "age"]}, True), ("Name: Ada", {"keys": ["name", "age"]}, False),
             ("Name:", {"keys": ["name"]}, False)],
            exclusive=layout("key_value_lines"))
def _key_value_lines(response: str, keys: list[str]) -> Verdict:
    missing = [k for k in keys if not re.search(r"^[ \t]*" + re.escape(k) + r"[ \t]*:[ \t]*\S", response,
                                                flags=re.MULTILINE | re.IGNORECASE)]
    return Verdict(not missing, f"lines for {keys}", f"missing {missing}" if missing else "all present")


@constraint("table_columns", "A Markdown table (header row, then a --- separator row) whose header has exactly n "
            "columns.", "format", {"n": {"type": "integer", "minimum": 1, "maximum": 20}},
            [("| a | b |\n|---|---|\n| 1 | 2 |", {"n": 2}, True), ("| a | b |\n|---|---|", {"n": 3}, False),
             ("a b", {"n": 1}, False)],
            exclusive=layout("table_columns"), measure="table columns", relation="exactly")
def _table_columns(response: str, n: int) -> Verdict:
    table = first_table(response)
    if table is None:
        return Verdict(False, f"a table of {n} columns", "no Markdown table")
    return counted("columns", "exactly", n, len(table[0].strip("|").split("|")))


@constraint("end_with_question", "The response ends with a question: its last character (trailing whitespace aside) "
            "is '?'.", "format", {}, [("Shall we?", {}, True), ("We shall.", {}, False), ("", {}, False)],
            exclusive=("punctuation:question",) + layout("end_with_question"))
def _end_with_question(response: str) -> Verdict:
    text = response.rstrip()
    return Verdict(text.endswith("?"), "ends with '?'", repr(text[-20:]) if text else "empty")
