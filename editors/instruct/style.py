"""Edits of the style constraint types (see :mod:`vicogym.programs.instruct.style`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

import numpy as np

from vicogym.editors.instruct.edits import count_edits, cue_edits, draw_values, edits, holds, no_params
from vicogym.editors.instruct.text import draw_int, draw_relation, drop_words, material
from vicogym.programs.instruct import REGISTRY
from vicogym.programs.instruct.style import (
    AUDIENCES,
    CONTRACTION,
    DEVICES,
    LANGUAGES,
    PRONOUNS,
    ROLES,
    SCRIPTS,
    SIMPLIFYING,
    SLANG,
    TONES,
)
from vicogym.programs.instruct.text import words
from vicogym.validation import pick


def satisfy_lowercase(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    # characters without a lowercase form are dropped; a lowercase word where no letter is left
    text = "".join(c for c in response.lower() if not (c.isupper() or unicodedata.category(c) == "Lt"))
    return text if text.islower() else text + " ok"


def satisfy_uppercase(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    text = "".join(c for c in response.upper() if not (c.islower() or unicodedata.category(c) == "Lt"))
    return text if text.isupper() else text + " OK"


def violate_lowercase(response, params, rng):
    return response + ' NOT'


edits("lowercase",
      ("Your entire response should be in lowercase letters; no capital letters are allowed.",
       "Write everything in lowercase."), satisfy_lowercase, violate_lowercase, draw=no_params)


def violate_uppercase(response, params, rng):
    return response + ' not'


edits("uppercase",
      ("Your entire response should be in English, and in all capital letters.",
       "Write everything in CAPITAL LETTERS."), satisfy_uppercase, violate_uppercase, draw=no_params)


def _capitals(response: str, k: int, params: Mapping[str, Any]) -> str:
    text = re.sub(r"\w+", lambda m: m.group().lower() if m.group().isupper() else m.group(), response)
    text = drop_words(text, str.isupper)
    return text + "".join(f" {w.upper()}" for w in material(response, k)[:k])


edits("capital_words", ("Use {relation} {n} words in all capital letters.", "Write {relation} {n} words in ALL CAPS."),
      *count_edits("capital_words", _capitals),
      draw=lambda rng: {"n": draw_int(rng, 1, 4), "relation": draw_relation(rng)})




SCRIPT_WORDS = {"latin": "text", "cyrillic": "текст", "greek": "κείμενο", "cjk": "文本", "arabic": "نص",
                "devanagari": "पाठ"}


def satisfy_script(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    names = SCRIPTS[params["script"]]
    text = "".join(c for c in response if not c.isalpha() or unicodedata.name(c, "").startswith(names))
    return text if any(c.isalpha() for c in text) else text + " " + SCRIPT_WORDS[params["script"]]


def violate_script(response, params, rng):
    return response + (' мир' if params['script'] == 'latin' else ' world')


edits("script", ("Write using only the {script} script.", "Use {script} letters only."), satisfy_script, violate_script,
      draw=lambda rng: {"script": pick(rng, list(SCRIPT_WORDS))})


LANGUAGE_TEXTS = {
    "en": "The picture shows a quiet street in the morning, with a red car parked next to a small bakery.",
    "fr": "L'image montre une rue calme le matin, avec une voiture rouge garée à côté d'une petite boulangerie.",
    "de": "Das Bild zeigt eine ruhige Straße am Morgen, mit einem roten Auto, das neben einer kleinen Bäckerei parkt.",
    "es": "La imagen muestra una calle tranquila por la mañana, con un coche rojo aparcado junto a una "
    "pequeña panadería.",
    "it": "L'immagine mostra una strada tranquilla al mattino, con un'auto rossa parcheggiata accanto a una piccola "
    "panetteria.",
    "pt": "A imagem mostra uma rua tranquila de manhã, com um carro vermelho estacionado ao lado de "
    "uma pequena padaria.",
    "nl": "De afbeelding toont een rustige straat in de ochtend, met een rode auto geparkeerd naast een "
    "kleine bakkerij.",
}


# the simulated executor cannot translate: it answers with a stock description in the language
def satisfy_language(response, params, rng):
    return response if response.strip() and holds('language', response, params) else LANGUAGE_TEXTS[params['language']]


def violate_language(response, params, rng):
    return LANGUAGE_TEXTS['de' if params['language'] == 'en' else 'en']


edits("language",
      ("Your entire response must be in the language with ISO 639-1 code '{language}'; no other language is allowed.",
       "Answer only in language '{language}' (an ISO 639-1 code, e.g. de = German)."), satisfy_language,
      violate_language, draw=lambda rng: {"language": pick(rng, list(LANGUAGES))})


def satisfy_perspective(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    person = params["person"]
    banned = set().union(*(found for who, found in PRONOUNS.items() if who != person))
    text = drop_words(response, lambda w: w.lower() in banned)
    if person == "third":
        return text if words(text) else text + " It works."
    has = any(w.lower() in PRONOUNS[person] for w in words(text))
    return text if has else ("I note: " if person == "first" else "You can see that ") + text


def violate_perspective(response, params, rng):
    return response + (' You agree.' if params['person'] == 'first' else ' I agree.')


edits("perspective", ("Write in the {person} person.", "Use a {person}-person point of view throughout."),
      satisfy_perspective, violate_perspective, draw=lambda rng: {"person": pick(rng, ("first", "second", "third"))})


EXPANSIONS = {"won't": "will not", "can't": "cannot", "let's": "let us", "n't": " not", "'re": " are", "'ve": " have",
              "'ll": " will", "'m": " am", "'d": " would", "'s": " is"}


def satisfy_no_contractions(response: str, params: Mapping[str, Any], rng: np.random.Generator) -> str:
    def full(match: re.Match) -> str:
        word = match.group().replace("’", "'")
        whole = EXPANSIONS.get(word.lower())
        if whole:
            return whole
        end = next((e for e in ("n't", "'re", "'ve", "'ll", "'m", "'d", "'s") if word.lower().endswith(e)), None)
        return word[:-len(end)] + EXPANSIONS[end] if end else word.replace("'", "")

    text = re.sub(CONTRACTION, full, response, flags=re.IGNORECASE)
    # what expansion cannot fix (odd Unicode case pairs) loses its apostrophe
    while re.search(CONTRACTION, text, flags=re.IGNORECASE):
        text = re.sub(CONTRACTION, lambda m: m.group().replace("'", "").replace("’", ""), text, flags=re.IGNORECASE)
    return text


def violate_no_contractions(response, params, rng):
    return response + " It's done."


edits("no_contractions", ("Do not use contractions (write 'do not', not 'don't').", "Avoid contractions entirely."),
      satisfy_no_contractions, violate_no_contractions, draw=no_params)


def meet_tone(response: str, params: Mapping[str, Any]) -> str:
    """What the tone's evidence needs: no contractions, slang or exclamations when formal,
    no exclamations when neutral, one when enthusiastic."""
    tone = params["tone"]
    if tone == "formal":
        response = SLANG.sub("", satisfy_no_contractions(response, {}, np.random.default_rng(0)))
    if tone in ("formal", "neutral"):
        response = response.replace("!", ".")
    if tone == "enthusiastic" and "!" not in response:
        response += " What a sight!"
    return response


def meet_audience(response: str, params: Mapping[str, Any]) -> str:
    """No simplifying for experts and engineers; short words for children."""
    if params["audience"] in ("experts", "engineers"):
        response = SIMPLIFYING.sub("", response)
    if params["audience"] == "children":
        for _ in range(200):
            ws = words(response)
            if not ws or sum(map(len, ws)) / len(ws) <= 6.0:
                break
            response += " It is big and red, and we can see it."
    return response


def meet_device(response: str, params: Mapping[str, Any]) -> str:
    """A question mark, a 'like', a 'but' or a word said three times, as the device needs."""
    extra = {"rhetorical question": " Who could miss it?", "simile": " It stands like a tower.",
             "contrast": " But the rest is not the same.", "repetition": " Again, again and again."}
    device = params["device"]
    fails = REGISTRY["rhetorical_device"].evidence(response, device=device)
    return response + extra[device] if fails is not None and device in extra else response


edits("tone", ("Write in a {tone} tone.", "Keep the tone {tone} throughout."), *cue_edits("tone", meet_tone),
      draw=draw_values({"tone": TONES}))


edits("audience_adaptation", ("Explain it for {audience}.", "Adapt your answer to an audience of {audience}."),
      *cue_edits("audience_adaptation", meet_audience), draw=draw_values({"audience": AUDIENCES}))


edits("persona", ("Answer as a {role} would.", "Take on the role of a {role} in your answer."), *cue_edits("persona"),
      draw=draw_values({"role": ROLES}))


edits("rhetorical_device", ("Use a {device} in your answer.", "Include at least one {device}."),
      *cue_edits("rhetorical_device", meet_device), draw=draw_values({"device": DEVICES}))
