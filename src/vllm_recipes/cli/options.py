"""The selection options of ``command``, ``explain``, ``export``, ``fit`` and ``diff``, generated
from the one parameter table (:mod:`vllm_recipes.select.params`), and the :class:`Query` they make; the
hardware and model-fact options ``fit``, ``perf`` and ``recommend`` share."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.fit.limits import MAX_GPU_MEMORY, MAX_GPUS
from vllm_recipes.select.params import PARAMS, Param
from vllm_recipes.select.request import PageRequest
from vllm_recipes.select.state import PageState
from vllm_recipes.service import Query
from vllm_recipes.service.answers import select

from .main import fail, find_or_exit, recipes_dir_option, refusals

F = TypeVar("F", bound=Callable[..., Any])


def _option(p: Param) -> Callable[[F], F]:
    assert p.cli is not None
    help_text = p.help + (" 'auto' detects the local GPUs." if p.name == "hardware" else "")
    if p.fixed and p.kind == "str" and not p.closed:
        help_text += f" One of: {', '.join(p.fixed)}."
    multiple = p.kind in ("list", "pairs")
    if multiple:
        help_text += " Repeatable."
    kind: click.ParamType | None = None
    if p.kind == "int":
        kind = click.IntRange(p.lo, p.hi)
    elif p.closed:
        kind = click.Choice(list(p.fixed), case_sensitive=False)
    return click.option(p.cli, p.field, type=kind, multiple=multiple, help=help_text)


def _stacked(fn: F, decorators: list[Callable[[F], F]]) -> F:
    """``fn`` under ``decorators``, the first one outermost (its option listed first)."""
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def selection_options(fn: F) -> F:
    """Every command-line selection parameter, ``--recipes-dir`` and the ``HF_ID`` argument."""
    return _stacked(fn, [*(_option(p) for p in PARAMS if p.cli is not None), recipes_dir_option,
                         click.argument("hf_id")])


class PositiveSize(click.FloatRange):
    """A positive number of ``unit``: ``inf`` and ``nan`` are floats to click, and the planner cannot size them."""

    def __init__(self, unit: str, largest: float | None = None) -> None:
        super().__init__(min=0, min_open=True, max=largest)
        self.unit = unit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return super().convert(value, param, ctx)  # (click's own wording for what is not a number)
        if math.isnan(number) or number == math.inf:  # (before the range: -inf is refused there)
            self.fail(f"expected a positive number of {self.unit}, got {value!r}.", param, ctx)
        return super().convert(value, param, ctx)


def gpu_options(fn: F) -> F:
    """``--gpu``, ``--gpu-memory`` and ``--gpus``: hardware named without a profile (``fit``, ``perf``)."""
    return _stacked(fn, [
        click.option("--gpu", help='GPU name, e.g. "H100" or "RTX 5090" (a catalog profile when one matches).'),
        click.option("--gpu-memory", type=PositiveSize("GB", MAX_GPU_MEMORY), help="Memory per GPU in GB (custom)."),
        click.option("--gpus", type=click.IntRange(1, MAX_GPUS), help="Number of GPUs (with --gpu or --gpu-memory)."),
    ])


#: ``--hf-config PATH``: the model's architecture from a config.json (``fit``, ``perf``, ``recommend``)
hf_config_option = click.option(
    "--hf-config", type=click.Path(dir_okay=False), help="A Hugging Face config.json for the model's architecture "
    "(default: the recipe's architecture_facts, then the local HF cache).")
#: ``--offline``: model facts from the caches only (``fit``, ``perf``, ``recommend``)
offline_option = click.option(
    "--offline", is_flag=True, help="Never use the network: only the Hugging Face cache and the checkpoint "
    "summaries already cached (HF_HUB_OFFLINE=1 does the same).")


def _pairs(values: tuple[str, ...], option: str) -> tuple[tuple[str, str], ...]:
    out = []
    for v in values:
        f, sep, m = v.partition("=")
        if not sep:
            f, sep, m = v.partition(":")
        if not sep or not f or not m:
            raise click.UsageError(f"{option} expects FEATURE=MODE, got {v!r}.")
        out.append((f, m))
    return tuple(out)


def request_from_options(kw: dict[str, Any]) -> PageRequest:
    """The selection options' values -> a request (``None``/empty: not given)."""
    fields: dict[str, Any] = {}
    for p in PARAMS:
        if p.cli is None or p.field not in kw:
            continue
        value = kw[p.field]
        if p.kind == "pairs":
            value = _pairs(tuple(value or ()), p.cli)
        elif p.kind == "list":
            value = tuple(value or ())
        fields[p.field] = value
    pn, dn = fields.get("prefill_nodes"), fields.get("decode_nodes")
    if pn is not None and dn is not None and (pn == 0) != (dn == 0):
        fail("--prefill-nodes 0 asks for the co-located layout; pass --decode-nodes 0 too.")
    return PageRequest(**fields)


def find_recipe(catalog: Catalog, hf_id: str, kw: dict[str, Any]) -> Recipe:
    """Recipe by hf_id, or by a variant's own model id (which then selects that variant)."""
    recipe, vk = find_or_exit(catalog, hf_id)
    if vk is not None:
        kw["variant"] = kw.get("variant") or vk
    return recipe


def resolve_request(catalog: Catalog, recipe: Recipe, kw: dict[str, Any]) -> PageState:
    """The builder state of a ``vllm serve`` recipe for the selection options (exit 2 on a refusal)."""
    with refusals():
        state = select(catalog, Query(recipe.hf_id, request_from_options(kw))).state
    assert state is not None, "resolve_request is for vllm serve recipes"
    return state
