"""``llms.txt`` and ``llms-full.txt``: the catalog described for language models.

Layout: docs/agents.md. Every command is the engine's rendering of the selection named above it, so the
files cannot drift from the site.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.diagnostics import plural
from vllm_recipes.render.deployment import deployment_blocks, deployment_text
from vllm_recipes.render.omni import render_omni
from vllm_recipes.select.defaults import recipe_hardware
from vllm_recipes.select.gates import offered_strategies
from vllm_recipes.select.omni import select_omni
from vllm_recipes.select.params import URL_NAMES
from vllm_recipes.select.state import PageRequest, SelectionError, build_state
from vllm_recipes.synth.omni import resolve_omni
from vllm_recipes.synth.resolve import resolve

LLMS_TXT = "llms.txt"
LLMS_FULL_TXT = "llms-full.txt"


@dataclass(frozen=True)
class RenderedSelection:
    """One hardware's default selection of a recipe and its command (or why there is none)."""

    hardware: str
    strategy: str
    nodes: int
    command: str | None
    error: str | None = None


def resolve_url(hf_id: str, hardware: str | None = None) -> str:
    items = [("model", hf_id)] + ([("hardware", hardware)] if hardware else [])
    return "/api/resolve?" + urlencode(items, quote_via=quote, safe="/")


def default_selection(catalog: Catalog, recipe: Recipe, hardware: str | None) -> RenderedSelection:
    """The page's initial state on ``hardware`` (``None``: the default hardware), rendered."""
    try:
        if recipe.is_omni:
            osel = select_omni(catalog, recipe, hardware, None, None, None)
            shown = render_omni(catalog, recipe, osel, resolve_omni(catalog, recipe, osel.variant_key, osel.task,
                                                                    osel.hw_id)).shown
            return RenderedSelection(osel.hw_id, "omni", 1, shown)
        st = build_state(catalog, recipe, PageRequest(hardware=hardware), strict=True)
        ctx, plan = resolve(catalog, recipe, st.selection)
        text = deployment_text(deployment_blocks(ctx, plan, st.install))
        sel = st.selection
        return RenderedSelection(sel.hw_id, sel.strategy, sel.node_count, text)
    except SelectionError as exc:
        return RenderedSelection(hardware or "", "", 0, None, str(exc))
    except Exception as exc:  # a recipe the engine cannot render: say so, never stop the file
        return RenderedSelection(hardware or "", "", 0, None, f"{type(exc).__name__}: {exc}")


def _fence(text: str) -> str:
    """A backtick fence longer than any backtick run inside ``text``."""
    return "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _head(catalog: Catalog, base: str) -> list[str]:
    hardware = ", ".join(k for k in catalog.hardware_profiles if isinstance(k, str))
    strategies = ", ".join(catalog.serving_strategies)
    return [
        "# vLLM Recipes",
        "",
        f"> Exact, runnable vLLM deployment commands for {plural(len(catalog.recipes), 'model recipe')}, for every "
        "hardware, variant, parallelism and feature selection, synthesized from declarative serving recipes. "
        "Every command here is rendered by the same engine as the website: for any other selection ask the "
        "API instead of editing flags by hand.",
        "",
        "## How to get a command",
        "",
        f"- [Model index]({base}/models.json): every recipe and promoted variant with the path of its JSON.",
        f"- Recipe JSON: `{base}/{{org}}/{{repo}}.json` (the recommended rendering per hardware, variants, "
        f"features); per hardware `{base}/{{org}}/{{repo}}/hw/{{hardware}}.json`; per strategy "
        f"`{base}/{{org}}/{{repo}}/hw/{{hardware}}/strategies/{{strategy}}.json`.",
        f"- Any selection, live: `GET {base}/api/resolve?model={{org}}/{{repo}}&hardware=...&strategy=...` "
        "returns the rendering (command, argv, env, docker form), why each flag is there (layer and recipe "
        "file:line) and the copyable commands. Omitted choices take the page's defaults; a choice that cannot "
        "be honoured is a 400 naming the valid choices. Parameters: " + ", ".join(URL_NAMES) + ".",
        f"- [OpenAPI description]({base}/api/openapi.json) of the live API.",
        f"- Web page of a selection: `{base}/{{org}}/{{repo}}?hardware=...&strategy=...` (same parameters); "
        "send `Accept: application/json` for its state as JSON.",
        "- MCP: `vllm-recipes mcp` serves the tools list_recipes, show_recipe, resolve_command and explain "
        "over stdio (`--http PORT` for streamable HTTP).",
        f"- Hardware ids: {hardware}.",
        f"- Strategy ids: {strategies}.",
        "",
    ]


def llms_txt(catalog: Catalog, base: str = "") -> str:
    """The short file: head plus one line per recipe."""
    lines = [*_head(catalog, base), "## Recipes", ""]
    for recipe in catalog.recipes:
        d = default_selection(catalog, recipe, None)
        desc = _one_line(recipe.meta.get("description") or "")
        where = (f"default {d.hardware}, {d.strategy}" + (f", {d.nodes} nodes" if d.nodes > 1 else "")
                 if d.command is not None else f"no default command ({_one_line(d.error or '')})")
        lines.append(f"- [{recipe.hf_id}]({base}/{recipe.hf_id}): {desc + ' ' if desc else ''}"
                     f"({where}; JSON: {base}/{recipe.hf_id}.json)")
    lines += ["", "## Optional", "",
              f"- [llms-full.txt]({base}/{LLMS_FULL_TXT}): every recipe's default command on each hardware "
              "it offers.", ""]
    return "\n".join(lines)


def _recipe_section(catalog: Catalog, recipe: Recipe, base: str) -> Iterator[str]:
    yield f"## {recipe.hf_id}"
    yield ""
    desc = _one_line(recipe.meta.get("description") or "")
    if desc:
        yield desc
        yield ""
    hardware = recipe_hardware(catalog, recipe)
    yield f"- Page: {base}/{recipe.hf_id} (other selections: add `?hardware=...&strategy=...`)"
    yield f"- JSON: {base}/{recipe.hf_id}.json; live: {base}{resolve_url(recipe.hf_id)}&hardware=..."
    yield f"- Hardware: {', '.join(hardware)}"
    if not recipe.is_omni:
        yield f"- Strategies: {', '.join(offered_strategies(recipe.data))}"
        features = [f for f in recipe.data.get("features") or () if isinstance(f, str)]
        if features:
            yield f"- Features: {', '.join(features)}"
    variants = [k for k in recipe.variants if k != "default"]
    if variants:
        yield f"- Variants: {', '.join(variants)} (pass `variant=`)"
    yield ""
    for i, hw in enumerate(hardware):  # (the default first)
        d = default_selection(catalog, recipe, hw)
        title = f"### {hw}" + (" (default)" if i == 0 else "")
        yield title + (f": {d.strategy}, {plural(d.nodes, 'node')}" if d.command else "")
        yield ""
        yield f"Selection: {base}{resolve_url(recipe.hf_id, hw)}"
        yield ""
        if d.command is None:
            yield f"No command: {_one_line(d.error or '')}"
        else:
            fence = _fence(d.command)
            yield f"{fence}bash\n{d.command}\n{fence}"
        yield ""


def llms_full_txt(catalog: Catalog, base: str = "") -> str:
    """The long file: head plus every recipe's default command on each hardware it offers."""
    sections = (line for recipe in catalog.recipes for line in _recipe_section(catalog, recipe, base))
    return "\n".join([*_head(catalog, base), *sections])


def llms_files(catalog: Catalog, base: str = "") -> dict[str, bytes]:
    """Both files, encoded, by their path in the published tree."""
    return {LLMS_TXT: llms_txt(catalog, base).encode(), LLMS_FULL_TXT: llms_full_txt(catalog, base).encode()}
