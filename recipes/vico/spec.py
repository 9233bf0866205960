"""Model specs for the VICO recipe's scripts (standard library only, so any Python runs it).

    python3 spec.py model SPEC          the weights a spec names: openai:MODEL@URL and
                                        {"name": "openai", "model": MODEL, ...} give MODEL,
                                        transformers:DIR gives DIR, anything else is itself
    python3 spec.py actor MODEL URL     the actor spec of MODEL served at URL (JSON, with
                                        the paper's sampling temperature 0.7, Table 8)
    python3 spec.py rewriter MODEL URL  the rewriter spec: openai:MODEL@URL
    python3 spec.py current OUT ROLE    the spec of ROLE (actor or rewriter) the next round of
                                        the evolve run in OUT starts with (nothing if none yet)
"""

import json
import sys
from pathlib import Path

#: Table 8: sampling temperature of the actor's K answers
TEMPERATURE = 0.7


def model(spec: str) -> str:
    text = spec.strip()
    if text.startswith("{"):
        settings = json.loads(text)
        return settings.get("model") or settings.get("model_dir") or text
    if text.startswith("openai:") and "@" in text:
        return text[len("openai:"):].rsplit("@", 1)[0]
    if text.startswith("transformers:"):
        return text[len("transformers:"):]
    return text


def actor(name: str, url: str) -> str:
    return json.dumps({"name": "openai", "model": name, "base_url": url, "temperature": TEMPERATURE})


def rewriter(name: str, url: str) -> str:
    return f"openai:{name}@{url}"


def current(out: str, role: str) -> str:
    """What ``vicogym evolve`` runs its next round with: the last round's next spec where
    its training wrote one, else that round's own."""
    state = Path(out) / "evolve.json"
    if not state.is_file():
        return ""
    rounds = json.loads(state.read_text(encoding="utf-8")).get("rounds", [])
    if not rounds:
        return ""
    last = rounds[-1]
    written = Path(out) / f"round-{last['round']:03d}" / f"next_{role}"
    if written.is_file() and written.read_text(encoding="utf-8").strip():
        return written.read_text(encoding="utf-8").strip()
    spec = last[role]
    return spec if isinstance(spec, str) else json.dumps(spec)


COMMANDS = {"model": (model, 1), "actor": (actor, 2), "rewriter": (rewriter, 2), "current": (current, 2)}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS or len(argv) - 1 != COMMANDS[argv[0]][1]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if argv[0] == "current" and argv[2] not in ("actor", "rewriter"):
        print(f"spec.py current: expected ROLE actor or rewriter, got {argv[2]!r}", file=sys.stderr)
        return 2
    function, _ = COMMANDS[argv[0]]
    print(function(*argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
