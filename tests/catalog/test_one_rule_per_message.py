"""A recipe file says the same thing wherever it is validated from: inside the recipes directory or
given on the command line from elsewhere (one rule for "a recipe must be a mapping", one for the name a
strategy file without ``name`` gets)."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union

import pytest
from pydantic import BaseModel, Discriminator

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog import models as m
from vllm_recipes.catalog.validate import validate_catalog, validate_file


@pytest.mark.parametrize(("text", "got"),
                         [("- a\n- b\n", "a list"), ("", "an empty file"), ("7\n", "a number")])
def test_a_recipe_that_is_no_mapping_reads_alike_inside_and_outside(tmp_path: Path, text: str,
                                                                     got: str) -> None:
    inside = tmp_path / "cat" / "models" / "org" / "r.yaml"
    inside.parent.mkdir(parents=True)
    inside.write_text(text)
    outside = tmp_path / "elsewhere" / "models" / "org" / "r.yaml"
    outside.parent.mkdir(parents=True)
    outside.write_text(text)
    catalog = load_catalog(tmp_path / "cat")
    expected = f"a recipe must be a mapping at the top level, got {got}"
    assert [f.message for f in validate_catalog(catalog)] == [expected]
    assert [f.message for f in validate_file(outside, catalog, "r.yaml")] == [expected]


def test_a_strategy_file_without_name_is_named_as_the_loader_names_it(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "strategies").mkdir()
    (tmp_path / "strategies" / ".yaml").write_text("deploy_type: single_node\n")
    catalog = load_catalog(tmp_path)
    assert ".yaml" in catalog.serving_strategies
    bad = [f.message for f in validate_catalog(catalog) if f.code == "bad-id"]
    assert bad == ["strategy name (from the file name) '.yaml' is not a valid identifier "
                   "(1-96 characters of A-Z a-z 0-9 . _ - starting with a letter, digit or _)"]


def _unions(tp: Any, seen: set[int]) -> Iterator[tuple[Any, bool]]:
    """Every union reachable from ``tp``, with whether a shape discriminator picks its member."""
    if id(tp) in seen:
        return
    seen.add(id(tp))
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        discriminated = any(isinstance(x, Discriminator) for x in args[1:])
        if typing.get_origin(args[0]) in (Union, types.UnionType):
            yield args[0], discriminated
            for member in typing.get_args(args[0]):
                yield from _unions(member, seen)
        else:
            yield from _unions(args[0], seen)
    elif origin in (Union, types.UnionType):
        yield tp, False
        for member in args:
            yield from _unions(member, seen)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        for hint in typing.get_type_hints(tp, include_extras=True).values():
            yield from _unions(hint, seen)
    else:
        for arg in args:
            yield from _unions(arg, seen)


def test_every_union_of_the_models_is_optional_or_picked_by_shape() -> None:
    """The unknown-key walk of ``validate`` follows the one member of ``X | None``, and the member a
    discriminator picks otherwise: a union of two types without a discriminator would be guessed."""
    seen: set[int] = set()
    for model in (m.RecipeModel, m.TaxonomyModel, m.StrategyModel, m.KvStoreModel, m.PlatformsModel):
        for union, discriminated in _unions(model, seen):
            members = [a for a in typing.get_args(union) if a is not type(None)]
            assert discriminated or len(members) == 1, union
