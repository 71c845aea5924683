#!/usr/bin/env python3
"""Generate transcope's pricing table (prices.json) from litellm's model-price list.

Modes:
  generate.py                      read litellm-model-prices.json, write prices.json
  generate.py --check              regenerate in memory; exit 1 if prices.json differs
  generate.py --filter FULL.json   read litellm's whole list (FULL.json) and write the
                                   filtered copy litellm-model-prices.json kept here

The output depends only on the filtered copy and the constants below: keys are sorted,
floats are written with Python's shortest round-trip repr, so two runs give the same
bytes. Only the standard library is used.
"""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILTERED = HERE / "litellm-model-prices.json"
OUTPUT = HERE / "prices.json"

# Where the filtered copy came from (see SOURCE.md); update these when re-filtering.
SOURCE = (
    "litellm 1.100.0 model_prices_and_context_window.json "
    "(https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json, "
    "as packaged in the litellm 1.100.0 wheel; cross-checked against commit "
    "00035b69f416be24e2e323c13198d9b7d2d1bdf9), retrieved 2026-12-01, "
    "MIT licence, Copyright (c) 2023 Berri AI"
)

# The model families kept (bare names, or Google AI Studio's `gemini/` names).
FAMILIES = re.compile(
    r"^(claude-"
    r"|gpt-4o|gpt-4\.1|gpt-5|o1|o3|o4-mini|codex-mini"
    r"|gemini-1\.5|gemini-2\.0|gemini-2\.5|gemini-3)"
)
# First-party providers only: a model resold by a cloud (bedrock, azure, ...) has its
# own prices and names and is not what the agents' transcripts name.
PROVIDERS = {"anthropic", "openai", "gemini", "vertex_ai-language-models"}
# Text models a coding agent talks to; image, audio, realtime and embedding entries
# price other units.
MODES = {"chat", "responses", "completion"}

# litellm field -> prices.json field. Each may also carry a tier suffix
# `_above_<N>k_tokens` (litellm's tiered prices).
FIELDS = {
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_creation_input_token_cost": "cache_write_5m",
    "cache_creation_input_token_cost_above_1hr": "cache_write_1h",
    "cache_read_input_token_cost": "cache_read",
    "output_cost_per_reasoning_token": "reasoning_output",
}
TIER = re.compile(r"^(?P<base>.+)_above_(?P<k>\d+)k_tokens$")


def kept_name(key):
    """The family-matching part of a litellm key, or None when the key is not kept."""
    if "/" in key:
        provider, _, rest = key.partition("/")
        if provider != "gemini" or "/" in rest:
            return None
        key = rest
    return key if FAMILIES.match(key) else None


def keep(key, entry):
    return (
        isinstance(entry, dict)
        and kept_name(key) is not None
        and entry.get("litellm_provider") in PROVIDERS
        and entry.get("mode") in MODES
        and isinstance(entry.get("input_cost_per_token"), (int, float))
        and isinstance(entry.get("output_cost_per_token"), (int, float))
    )


def number(key, field, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SystemExit(f"{key}: {field} is not a non-negative number: {value!r}")
    return float(value)


def convert(key, entry):
    """One litellm entry -> one prices.json model entry."""
    model = {"provider": entry["litellm_provider"]}
    tiers = {}
    for field, value in entry.items():
        if field in FIELDS:
            model[FIELDS[field]] = number(key, field, value)
            continue
        m = TIER.match(field)
        if m and m.group("base") in FIELDS:
            above = int(m.group("k")) * 1000
            tier = tiers.setdefault(above, {"above": above})
            tier[FIELDS[m.group("base")]] = number(key, field, value)
    if tiers:
        model["tiers"] = [tiers[a] for a in sorted(tiers)]
    return model


def generate(filtered):
    models = {}
    for key in sorted(filtered):
        if not keep(key, filtered[key]):
            raise SystemExit(f"{key}: in the filtered copy but not a kept model")
        models[key] = convert(key, filtered[key])
    table = {"source": SOURCE, "models": models}
    return json.dumps(table, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def filter_full(full):
    kept = {k: v for k, v in full.items() if keep(k, v)}
    return json.dumps(kept, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv):
    if len(argv) == 2 and argv[0] == "--filter":
        full = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        FILTERED.write_text(filter_full(full), encoding="utf-8")
        return 0
    text = generate(json.loads(FILTERED.read_text(encoding="utf-8")))
    if argv == ["--check"]:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is not what generate.py writes: run it", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
