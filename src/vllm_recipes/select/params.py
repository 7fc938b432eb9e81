"""The selection parameters, declared once.

The command line's options (``cli/options.py``), the page URL's parser and encoder, ``/api/resolve``'s
OpenAPI parameters and the MCP tools' input schemas (``service/params.py``) are all generated from
:data:`PARAMS`. A parameter's name is its URL spelling (docs/reference/ui.md "URL state"); the
selection code refuses values outside its range with the valid choices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from vllm_recipes.catalog import Catalog
from vllm_recipes.catalog.loader import POOL_MODES
from vllm_recipes.jsvalues import as_map, get, is_map

from .advanced import ADVANCED_OPTIONS
from .gates import MAX_NODES

Kind = Literal["str", "int", "list", "pairs"]

MAX_KV_INSTANCES = 16
INSTALL_METHODS = ("pip", "docker")
#: longest value a URL / API / tool parameter may carry
MAX_VALUE = 512


def _features(c: Catalog) -> list[str]:
    ids = (f for recipe in c.recipes for f in as_map(recipe.data.get("features")))
    return list(dict.fromkeys(ids))


def pd_routers(c: Catalog) -> list[str]:
    """Every PD router kind the catalog defines (extensions §2.6); a recipe may offer fewer."""
    routers = get(c.strategies.get("pd_cluster"), "routers")
    return list(routers) if is_map(routers) else ["vllm-router"]


@dataclass(frozen=True)
class Param:
    """One selection parameter (see the module docstring)."""

    name: str
    field: str
    kind: Kind
    help: str
    lo: int | None = None
    hi: int | None = None
    #: command-line option, ``None`` when the command line does not take it
    cli: str | None = None
    #: taken by the URL, the JSON API and the MCP tools
    url: bool = True
    #: the ids a catalog offers for this parameter
    choices: Callable[[Catalog], list[str]] | None = None
    #: ids that do not depend on the catalog (a recipe may still offer fewer)
    fixed: tuple[str, ...] = ()
    #: every recipe offers every ``fixed`` id (the command line checks them itself)
    closed: bool = False
    #: applies to omni recipes too
    omni: bool = False

    def choices_in(self, catalog: Catalog) -> list[str]:
        """The ids ``catalog`` offers for this parameter (empty: free text or a number)."""
        return list(self.fixed) or (self.choices(catalog) if self.choices is not None else [])


def _p(name: str, kind: Kind, help: str, *, field: str | None = None, cli: str | None = "",
       **kw: object) -> Param:
    """A parameter whose field and option follow from its name unless given (``cli=None``: no option)."""
    option = "--" + name.replace("_", "-") if cli == "" else cli
    return Param(name=name, field=field or name, kind=kind, help=help, cli=option, **kw)  # type: ignore[arg-type]


PARAMS: tuple[Param, ...] = (
    _p("hardware", "str", "Hardware profile id (default: the recipe's default hardware).",
       choices=lambda c: list(c.hardware_profiles), omni=True),
    _p("variant", "str", "Variant key, e.g. a precision variant (default: default).", omni=True),
    _p("strategy", "str", "Serving strategy id (default: the recipe's recommendation).",
       choices=lambda c: list(c.serving_strategies)),
    _p("nodes", "int", "Node count for multi-node strategies.", lo=1, hi=MAX_NODES),
    _p("features", "list", "Every enabled feature; replaces the default set.", cli=None, choices=_features),
    _p("feature", "list", "Enable a feature.", field="add_features", url=False, choices=_features),
    _p("no-feature", "list", "Disable a feature.", field="remove_features", url=False,
       choices=_features),
    _p("fmode", "pairs", "Feature mode as feature:mode (the command line also takes FEATURE=MODE).",
       cli="--mode"),
    _p("advanced", "list", "Advanced tuning option ids.", fixed=tuple(o.id for o in ADVANCED_OPTIONS)),
    _p("arg", "list", "Extra argument token appended as an advanced argument.",
       field="extra_args", url=False),
    _p("kv_offload", "str", "KV offload option or Mooncake deployment id ('off' for none).",
       choices=lambda c: ["off", *c.kv_offload_options, *c.kv_stores]),
    _p("kv_instances", "int", "Mooncake instance count.", lo=1, hi=MAX_KV_INSTANCES),
    _p("kv_instance", "int", "Mooncake instance to render (0-based).", lo=0, hi=MAX_KV_INSTANCES - 1),
    _p("prefill_nodes", "int", "PD prefill pool nodes (0 with decode_nodes 0: co-located on one node).",
       lo=0, hi=MAX_NODES),
    _p("decode_nodes", "int", "PD decode pool nodes.", lo=0, hi=MAX_NODES),
    _p("prefill_mode", "str", "PD prefill pool mode.", fixed=POOL_MODES),
    _p("decode_mode", "str", "PD decode pool mode.", fixed=POOL_MODES),
    _p("prefill_rank", "int", "PD prefill node to render (0-based).", lo=0, hi=MAX_NODES - 1),
    _p("decode_rank", "int", "PD decode node to render (0-based).", lo=0, hi=MAX_NODES - 1),
    _p("frontend", "str", "OpenAI-compatible frontend.", choices=lambda c: sorted(c.frontends)),
    _p("install", "str", "Install / run method.", fixed=INSTALL_METHODS, closed=True, omni=True),
    _p("router", "str", "PD router.", field="pd_router", choices=pd_routers),
    _p("task", "str", "Omni task key (omni recipes only).", omni=True),
)

BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}
#: the URL / API / MCP parameters, in the order a canonical URL writes them
URL_PARAMS: tuple[Param, ...] = tuple(p for p in PARAMS if p.url)
URL_NAMES: tuple[str, ...] = tuple(p.name for p in URL_PARAMS)
#: the parameters an omni recipe takes (the rest belong to ``vllm serve`` recipes)
OMNI_NAMES: tuple[str, ...] = tuple(p.name for p in PARAMS if p.omni)


def cli_option(name: str) -> str:
    """The command-line spelling of a parameter named in a message (``features`` -> ``--feature``)."""
    p = BY_NAME.get("feature" if name == "features" else name)
    return p.cli if p is not None and p.cli else "--" + name.replace("_", "-")
