"""One parameter table: the command line, the URL, OpenAPI and the MCP schemas agree with it."""

from __future__ import annotations

import dataclasses
from typing import Any

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.agents.tools import AgentTools
from vllm_recipes.catalog import Catalog
from vllm_recipes.cli.engine_cmds import command_cmd
from vllm_recipes.select.params import BY_NAME, PARAMS, URL_PARAMS
from vllm_recipes.select.request import PageRequest
from vllm_recipes.service.params import openapi_parameters
from vllm_recipes.service.url import encode, parse_params
from vllm_recipes.web.openapi import openapi_spec


def _click_options() -> dict[str, click.Option]:
    return {p.opts[0]: p for p in command_cmd.params if isinstance(p, click.Option)}


def test_every_request_field_has_one_parameter() -> None:
    fields = [f.name for f in dataclasses.fields(PageRequest)]
    assert sorted(p.field for p in PARAMS) == sorted(fields)
    assert len({p.name for p in PARAMS}) == len(PARAMS)


def test_the_command_line_takes_each_parameter_with_the_tables_range() -> None:
    options = _click_options()
    for p in PARAMS:
        if p.cli is None:
            continue
        opt = options[p.cli]
        assert opt.name == p.field and opt.multiple == (p.kind in ("list", "pairs")), p.name
        if p.kind == "int":
            assert isinstance(opt.type, click.IntRange) and (opt.type.min, opt.type.max) == (p.lo, p.hi), p.name


def test_openapi_and_mcp_give_the_same_ranges_and_names(catalog: Catalog) -> None:
    resolve = openapi_spec()["paths"]["/api/resolve"]["get"]["parameters"]
    api = {q["name"]: q["schema"] for q in resolve if q["name"] != "model"}
    assert [q["name"] for q in openapi_parameters()] == [p.name for p in URL_PARAMS] == list(api)
    mcp = AgentTools(catalog).selection_schema()["properties"]
    assert [k for k in mcp if k != "hf_id"] == [p.name for p in URL_PARAMS]
    for p in URL_PARAMS:
        if p.kind == "int":
            assert (api[p.name]["minimum"], api[p.name]["maximum"]) == (p.lo, p.hi) == \
                (mcp[p.name]["minimum"], mcp[p.name]["maximum"]), p.name


def test_mcp_enums_come_from_the_catalog(catalog: Catalog) -> None:
    mcp = AgentTools(catalog).selection_schema()["properties"]
    assert mcp["router"]["enum"] == list(catalog.strategies["pd_cluster"]["routers"])
    assert mcp["frontend"]["enum"] == sorted(catalog.frontends)
    assert mcp["prefill_mode"]["enum"] == ["tp", "tep", "dep"] == list(BY_NAME["prefill_mode"].fixed)
    assert mcp["hardware"]["enum"] == list(catalog.hardware_profiles)


_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12)


@st.composite
def requests(draw: Any) -> PageRequest:
    kw: dict[str, Any] = {}
    for p in URL_PARAMS:
        if not draw(st.booleans()):
            continue
        if p.kind == "int":
            kw[p.field] = draw(st.integers(0, 999))
        elif p.kind == "list":
            kw[p.field] = tuple(draw(st.lists(_ids, min_size=1, max_size=3)))
        elif p.kind == "pairs":
            kw[p.field] = tuple(draw(st.lists(st.tuples(_ids, _ids), min_size=1, max_size=3)))
        else:
            kw[p.field] = draw(_ids.filter(lambda v: v != "off"))
    return PageRequest(**kw)


def _params_of(req: PageRequest) -> dict[str, str]:
    out = {}
    for p in URL_PARAMS:
        value = getattr(req, p.field)
        if value in (None, ()):
            continue
        if p.kind == "list":
            out[p.name] = ",".join(value)
        elif p.kind == "pairs":
            out[p.name] = ",".join(f"{f}:{m}" for f, m in value)
        else:
            out[p.name] = str(value)
    return out


@settings(max_examples=200, deadline=None)
@given(requests())
def test_a_request_survives_the_url(req: PageRequest) -> None:
    from urllib.parse import parse_qsl

    query = encode(_params_of(req))
    assert parse_params(parse_qsl(query, keep_blank_values=True), strict=True)[0] == req


@pytest.mark.parametrize("name", [p.name for p in PARAMS if p.cli is not None])
def test_every_option_has_help(name: str) -> None:
    assert BY_NAME[name].help.endswith(".")
