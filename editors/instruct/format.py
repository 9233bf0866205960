"""Edits of the format constraint types (see :mod:`vicogym.programs.instruct.format`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from vicogym.editors.instruct.edits import count_edits, edits, holds, no_params
from vicogym.editors.instruct.text import FILLER, chunks, draw_int, draw_relation, material, remove_all
from vicogym.programs.instruct.format import LIST_ITEM, NUMBER, PUNCTUATION_RULES
from vicogym.programs.instruct.text import lines
from vicogym.validation import pick


def _xml_text(text: str) -> str:
    # XML 1.0 refuses most control characters even when escaped
    kept = "".join(c for c in text if c in "\t\n\r" or "\x20" <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd"
                   or c >= "\U00010000")
    return kept.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def satisfy_yaml_mapping(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    import yaml

    return yaml.safe_dump({"answer": response}, allow_unicode=True)


def satisfy_json_format(response, params, rng):
    return json.dumps({'answer': response})


def violate_json_format(response, params, rng):
    return 'Answer: ' + response


edits("json_format", ("Answer in valid JSON only.", "Format your entire response as a JSON object."),
      satisfy_json_format, violate_json_format, draw=no_params)


def violate_yaml_mapping(response, params, rng):
    return '- ' + json.dumps(response)


edits("yaml_mapping",
      ("Answer as a YAML mapping (key: value pairs) and nothing else.",
       "Write the whole response as YAML with top-level keys."), satisfy_yaml_mapping, violate_yaml_mapping,
      draw=no_params)


def satisfy_xml_document(response, params, rng):
    return f'<response>{_xml_text(response)}</response>'


def violate_xml_document(response, params, rng):
    return f'<response>{_xml_text(response)}'


edits("xml_document",
      ("Wrap the whole response in a single well-formed XML element.",
       "Answer in XML: one root element containing everything."), satisfy_xml_document, violate_xml_document,
      draw=no_params)


def _table(response: str, k: int, columns: int = 2) -> str:
    """A Markdown table of ``columns`` columns and ``k`` rows from the response's words."""
    cells = chunks(response, max(k, 1) * columns)
    head = "| " + " | ".join(f"column {j + 1}" for j in range(columns)) + " |"
    rule = "|" + "---|" * columns
    rows = ["| " + " | ".join(cells[i * columns:(i + 1) * columns]) + " |" for i in range(k)]
    return "\n".join([head, rule, *rows])


def build_markdown_table(response, k, params):
    return _table(response, k) + '\n\n' + response.replace('|', '/')


edits("markdown_table",
      ("Include a Markdown table with at least {n} rows.",
       "Present the details in a Markdown table of {n} or more data rows."),
      *count_edits("markdown_table", build_markdown_table, relation="at least"),
      draw=lambda rng: {"n": draw_int(rng, 1, 4)})


def satisfy_title(response, params, rng):
    return f"<<{' '.join(material(response)[:4]).title()}>>\n" + response


def violate_title(response, params, rng):
    return response.replace('<', '(').replace('>', ')')


edits("title",
      ("Give your answer a title wrapped in double angular brackets, such as <<poem of joy>>.",
       "Start with a title in double angle brackets, like <<title>>."), satisfy_title, violate_title, draw=no_params)


def _wrap_words(response: str, k: int, mark: str) -> str:
    """The first ``k`` words wrapped in ``mark`` (all asterisks removed first), topped up
    with marked filler where the response has fewer words."""
    text = response.replace("*", "")
    found = len(re.findall(r"\w+", text))
    text = re.sub(r"\w+", lambda m: mark + m.group() + mark, text, count=k) if k else text
    return text + "".join(f" {mark}{FILLER[i % len(FILLER)]}{mark}" for i in range(max(0, k - found)))


def build_highlighted_sections(response, k, params):
    return _wrap_words(response, k, '*')


edits("highlighted_sections",
      ("Highlight at least {n} sections with Markdown, i.e. *highlighted section*.",
       "Mark {n} or more key phrases in *italics*."),
      *count_edits("highlighted_sections", build_highlighted_sections, relation="at least"),
      draw=lambda rng: {"n": draw_int(rng, 1, 3)})


def _sections(response: str, k: int, params: Mapping[str, Any]) -> str:
    splitter = params["splitter"]
    if k == 0:
        return remove_all(re.escape(splitter), " ".join(material(response)), flags=0)
    return "\n".join(f"{splitter} {i + 1}\n{chunk}" for i, chunk in enumerate(chunks(response, k)))


def _draw_sections(rng: np.random.Generator) -> dict[str, Any]:
    params = {"n": draw_int(rng, 1, 4), "splitter": pick(rng, ("SECTION", "Section", "PART", "Part"))}
    return {**params, "relation": draw_relation(rng)} if rng.random() < 0.5 else params


edits("sections",
      ("Your response must have {n} sections; mark the beginning of each with {splitter} X.",
       "Split the answer into {n} parts, each headed '{splitter} 1', '{splitter} 2', and so on."),
      *count_edits("sections", _sections), draw=_draw_sections)


OPTIONS = (("My answer is yes.", "My answer is no.", "My answer is maybe."),
           ("I think yes.", "I think no.", "I think maybe."))


def _without_options(text: str, options: list[str]) -> str:
    while any(o in text for o in options):
        for o in options:
            text = text.replace(o, "")
    return text


def satisfy_choice(response, params, rng):
    return params['options'][0] if not response.strip() else params['options'][len(response) % len(params['options'])]


def violate_choice(response, params, rng):
    return 'I am not sure. ' + _without_options(response, params['options'])


edits("choice",
      ("Does the image show more than one thing? Answer with one of the following options: {options}.",
       "Is everything in the picture easy to make out? Choose one of: {options}."), satisfy_choice, violate_choice,
      draw=lambda rng: {"options": list(pick(rng, OPTIONS))})


def satisfy_code_block(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    body = response.replace("`", "'")
    return f"```{params.get('language', '')}\n{body}\n```"


def violate_code_block(response, params, rng):
    return response.replace('`', "'")


edits("code_block",
      ("Include a fenced {language} code block (```{language}).", "Put the {language} code in a ``` fenced block."),
      satisfy_code_block, violate_code_block, draw=lambda rng: {"language": pick(rng, ("python", "json", "bash"))})


def satisfy_two_responses(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    first = response.replace("*", "").strip() or "Yes."
    return f"{first}\n******\nIn other words: {first}"


def violate_two_responses(response, params, rng):
    return response.replace('*', '')


edits("two_responses",
      ("Give two different responses, separated by six asterisks: ******.",
       "Write two alternative answers split by a line of six asterisks (******)."), satisfy_two_responses,
      violate_two_responses, draw=no_params)


def _list(response: str, k: int, marker: Callable[[int], str], strip: str) -> str:
    """``k`` list items from the response's words; with k = 0 the response without list
    marks (``strip``: the characters that could start an item)."""
    if k == 0:
        return re.sub(strip, "", response)
    return "\n".join(marker(i) + chunk for i, chunk in enumerate(chunks(response, k)))


def build_bullet_list(response, k, params):
    return _list(response, k, lambda i: '* ', '[*-]')


edits("bullet_list",
      ("Your answer must contain exactly {n} bullet points, such as:\n* point one\n* point two",
       "Use exactly {n} Markdown bullet points."), *count_edits("bullet_list", build_bullet_list, relation="exactly"),
      draw=lambda rng: {"n": draw_int(rng, 1, 5)})


def build_numbered_list(response, k, params):
    return _list(response, k, lambda i: f'{i + 1}. ', '\\d')


edits("numbered_list",
      ("Give {relation} {n} numbered items (1., 2., ...).", "Answer as a numbered list with {relation} {n} items."),
      *count_edits("numbered_list", build_numbered_list),
      draw=lambda rng: {"n": draw_int(rng, 1, 5), "relation": draw_relation(rng)})


def satisfy_punctuation_control(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    mark = PUNCTUATION_RULES[params["rule"]]
    if mark is not None:
        return response.replace(mark, "," if mark == ";" else ".")
    text = response.replace("!", ".").replace("?", ".").rstrip()
    return text if text.endswith(".") else (text + "." if text else "Noted.")


def violate_punctuation_control(response, params, rng):
    return (response + {"no exclamation marks": " Wow!", "no question marks": " Why?", "no semicolons": " yes; no",
                        "every sentence ends with a period": " Really?"}[params["rule"]])


edits("punctuation_control", ("Punctuation rule: {rule}.", "Follow this punctuation rule throughout: {rule}."),
      satisfy_punctuation_control, violate_punctuation_control,
      draw=lambda rng: {"rule": pick(rng, list(PUNCTUATION_RULES))})


def satisfy_number_precision(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    d = params["decimals"]

    def fix(number: str) -> str:
        whole, _, fraction = number.partition(".")
        return whole + ("." + (fraction + "0" * d)[:d] if d else "")

    text = re.sub(NUMBER, lambda m: fix(m.group()), response)
    if holds("number_precision", text, params):
        return text
    # numbers run together (1.5.5) or none at all: keep the words, state one number cleanly
    return re.sub(r"[0-9]", "", response).rstrip() + " " + fix(str(draw_int(rng, 1, 99)))


def violate_number_precision(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    return response + " 7." + "5" * (params["decimals"] + 1)


edits("number_precision",
      ("Write every number with exactly {decimals} decimal places.",
       "Give all numbers to {decimals} decimal places (e.g. 3 as 3 followed by {decimals} decimals)."),
      satisfy_number_precision, violate_number_precision, draw=lambda rng: {"decimals": draw_int(rng, 0, 3)})


def build_bold_count(response, k, params):
    return _wrap_words(response, k, '**')


edits("bold_count", ("Put {relation} {n} key phrases in **bold**.", "Use **bold** for {relation} {n} terms."),
      *count_edits("bold_count", build_bold_count),
      draw=lambda rng: {"n": draw_int(rng, 1, 4), "relation": draw_relation(rng)})


def build_italic_count(response, k, params):
    return _wrap_words(response, k, '*')


edits("italic_count",
      ("Put {relation} {n} words in *italics* (single asterisks).",
       "Italicise {relation} {n} terms with *single asterisks*."), *count_edits("italic_count", build_italic_count),
      draw=lambda rng: {"n": draw_int(rng, 1, 4), "relation": draw_relation(rng)})


def build_numbered_steps(response, k, params):
    return '\n'.join((f'Step {i + 1}: {c}' for i, c in enumerate(chunks(response, k)))) if k else ''


edits("numbered_steps",
      ("Lay out the answer as exactly {n} steps, each line starting 'Step 1:', 'Step 2:', ...",
       "Explain it in {n} steps written 'Step 1: ...', 'Step 2: ...'."),
      *count_edits("numbered_steps", build_numbered_steps, relation="exactly"),
      draw=lambda rng: {"n": draw_int(rng, 1, 5)})


def satisfy_list_format(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    items = [line.strip() for line in lines(response)] or [" ".join(material(response)[:8])]
    mark = (lambda i: "- ") if params["style"] == "bullet" else (lambda i: f"{i + 1}. ")
    return "\n".join(mark(i) + item for i, item in enumerate(items))


def violate_list_format(response, params, rng):
    return response + '\nIn short, that is all.'


edits("list_format",
      ("Format the entire response as a {style} list, one item per line, nothing else.",
       "Answer only with a {style} list."), satisfy_list_format, violate_list_format,
      draw=lambda rng: {"style": pick(rng, list(LIST_ITEM))})


def build_line_count(response, k, params):
    return '\n'.join(chunks(response, k)) if k else ''


edits("line_count", ("Write {relation} {n} non-empty lines.", "Your answer should span {relation} {n} lines."),
      *count_edits("line_count", build_line_count),
      draw=lambda rng: {"n": draw_int(rng, 1, 6), "relation": draw_relation(rng)})


def build_blockquote(response, k, params):
    return ''.join(f'> {c}\n' for c in (chunks(response, k) if k else [])) + '\n' + response.replace('>', ')')


edits("blockquote",
      ("Quote at least {n} lines as Markdown blockquotes (lines starting with '>').",
       "Include {n} or more '> ' quoted lines."), *count_edits("blockquote", build_blockquote, relation="at least"),
      draw=lambda rng: {"n": draw_int(rng, 1, 3)})


def satisfy_key_value_lines(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    value = " ".join(material(response)[:3])
    missing = [k for k in params["keys"] if not holds("key_value_lines", response, {"keys": [k]})]
    return response + "".join(f"\n{k.capitalize()}: {value}" for k in missing)


def violate_key_value_lines(response, params, rng):
    return response.replace(':', ' -')


edits(
    "key_value_lines",
    (
        "Include a line for each of {keys}, written 'Key: value'.",
        "Give these fields, one per line as 'Key: value': {keys}.",
    ),
    satisfy_key_value_lines,
    violate_key_value_lines,
    draw=lambda rng: {
        "keys": [
            str(k) for k in rng.choice(["name", "color", "size", "count", "place"], draw_int(rng, 1, 3), replace=False)
        ]
    },
)


def build_table_columns(response, k, params):
    return _table(response, 1, k) + '\n\n' + response.replace('|', '/')


edits("table_columns",
      ("Include a Markdown table with exactly {n} columns.", "Present the data in a table of {n} columns (Markdown)."),
      *count_edits("table_columns", build_table_columns, relation="exactly"),
      draw=lambda rng: {"n": draw_int(rng, 2, 4)})


def satisfy_end_with_question(response, params, rng):
    return response if response.rstrip().endswith('?') else (response.rstrip() + ' What do you think?').lstrip()


def violate_end_with_question(response, params, rng):
    return response.rstrip().rstrip('?') + '.'


edits("end_with_question", ("End your response with a question.", "Finish with a question to the reader."),
      satisfy_end_with_question, violate_end_with_question, draw=no_params)
