"""The service layer: one lookup, one omni/serve split, typed errors naming the valid choices."""

from __future__ import annotations

import textwrap

import pytest

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.render.export import ExportOptions
from vllm_recipes.select.request import PageRequest
from vllm_recipes.service import (
    CannotExport,
    NotApplicable,
    Query,
    QueryError,
    RecipeLoadError,
    UnknownRecipe,
    answers,
    find_recipe,
)
from vllm_recipes.service.url import query_from_items

RECIPE = """\
meta: {title: Test Model, provider: Org, hardware: {h200: verified}}
model: {model_id: org/Test}
variants:
  default: {precision: bf16, vram_minimum_gb: 100}
  fp8: {model_id: other/Test-FP8, precision: fp8, vram_minimum_gb: 60}
compatible_strategies: [single_node_tp, multi_node_tp]
"""

OMNI = """\
meta: {title: Tiny video, provider: Acme, tasks: [omni]}
model: {model_id: acme/Video, serve_binary: vllm-omni}
omni: {tasks: [t2v]}
variants:
  default: {precision: bf16, vram_minimum_gb: 20}
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    root = tmp_path_factory.mktemp("recipes")
    for rel, text in (("org/Test.yaml", RECIPE), ("acme/Video.yaml", OMNI), ("org/Broken.yaml", "meta: [\n")):
        path = root / "models" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_catalog(str(root))


@pytest.mark.parametrize("model", ["org/Test", "ORG/test", " org/Test "])
def test_a_recipe_is_found_by_its_id_in_any_case(small: Catalog, model: str) -> None:
    recipe, variant = find_recipe(small, model)
    assert recipe.hf_id == "org/Test" and variant is None


def test_a_variant_model_id_finds_its_recipe_and_selects_the_variant(small: Catalog) -> None:
    recipe, variant = find_recipe(small, "Other/test-fp8")
    assert (recipe.hf_id, variant) == ("org/Test", "fp8")
    state = answers.select(small, Query("other/Test-FP8")).state
    assert state is not None and state.selection.variant_key == "fp8"


def test_an_unknown_recipe_names_the_close_matches(small: Catalog) -> None:
    with pytest.raises(UnknownRecipe) as err:
        find_recipe(small, "org/Tset")
    assert err.value.param == "model" and err.value.choices == ["org/Test"]
    assert str(err.value) == "Unknown recipe 'org/Tset'. Did you mean: org/Test?"


def test_a_broken_file_says_it_failed_to_load_with_its_line(small: Catalog) -> None:
    with pytest.raises(RecipeLoadError, match=r"Recipe 'org/Broken' failed to load: models/org/Broken\.yaml:\d+"):
        find_recipe(small, "org/Broken")


def test_a_bad_choice_is_a_query_error_with_the_valid_choices(small: Catalog) -> None:
    with pytest.raises(QueryError) as err:
        answers.resolve(small, Query("org/Test", PageRequest(strategy="pd_cluster")))
    assert err.value.param == "strategy" and err.value.choices == ["single_node_tp", "multi_node_tp"]
    assert err.value.text("cli").startswith("--strategy 'pd_cluster' is not offered by org/Test.")


def test_the_omni_split_is_decided_once(small: Catalog) -> None:
    omni = answers.resolve(small, Query("acme/Video"))
    assert omni.selected.state is None and omni.selected.omni is not None and omni.omni_plan is not None
    serve = answers.resolve(small, Query("org/Test"))
    assert serve.selected.omni is None and serve.plan is not None
    with pytest.raises(NotApplicable) as err:
        answers.select(small, Query("acme/Video", PageRequest(nodes=2)))
    assert err.value.param == "nodes"
    assert "it takes --hardware, --variant, --install, --task only (got --nodes)" in err.value.text("cli")
    with pytest.raises(NotApplicable, match="export supports `vllm serve` recipes only"):
        answers.export(small, Query("acme/Video"), "k8s")


def test_export_refusals_are_typed(small: Catalog) -> None:
    with pytest.raises(CannotExport) as err:
        answers.export(small, Query("org/Test", PageRequest(nodes=2)), "compose", ExportOptions())
    assert err.value.param == "to" and str(err.value).startswith("Cannot export to compose:")


def test_the_url_and_the_typed_arguments_make_the_same_query(small: Catalog) -> None:
    from vllm_recipes.service.params import request_from_args

    url, _extra = query_from_items([("model", "org/Test"), ("nodes", "2"), ("features", "a,b"),
                                    ("fmode", "a:x"), ("router", "vllm-router"), ("lang", "zh")])
    typed = Query("org/Test", request_from_args({"nodes": 2, "features": ["a", "b"], "fmode": {"a": "x"},
                                                 "router": "vllm-router"}))
    assert url == typed


def test_the_api_payload_is_the_service_answer(catalog: Catalog) -> None:
    from vllm_recipes.web.live_api import resolve_payload

    model = "deepseek-ai/DeepSeek-V4.1-Flash"
    assert resolve_payload(catalog, [("model", model), ("hardware", "h200")]) == \
        answers.resolve_payload(catalog, Query(model, PageRequest(hardware="h200")))


def test_a_selection_dict_carries_its_canonical_url(catalog: Catalog) -> None:
    model = "deepseek-ai/DeepSeek-V4.1-Flash"
    selected = answers.select(catalog, Query(model.upper(), PageRequest(hardware="H200")))
    assert selected.state is not None
    shown = answers.selection_dict(catalog, selected.recipe, selected.state)
    assert shown["model"] == model and shown["hardware"] == "h200" and shown["url"] == f"/{model}?hardware=h200"
