"""Other spellings of the same selection (ids in any case, the public site's advanced ids),
refusals in the reader's spelling, and the PD pool size after a mode override."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_recipes.catalog import Catalog, load_catalog
from vllm_recipes.select.advanced import ADVANCED_OPTIONS
from vllm_recipes.select.aliases import canonical, public_ids
from vllm_recipes.select.state import PageRequest, PageState, SelectionError, build_state
from vllm_recipes.service.url import canonical_params, lenient_state
from vllm_recipes.synth.resolve import resolve

HF = "org/model"
RECIPE: dict[str, Any] = {
    "meta": {"title": "Model"},
    "model": {"model_id": HF, "flashinfer_autotune": True},
    "variants": {"default": {"precision": "fp8", "vram_minimum_gb": 100}},
    "features": {"reasoning": {"description": "r", "args": ["--reasoning-parser", "x"]}},
    "compatible_strategies": ["single_node_tp", "multi_node_tp", "multi_node_dep", "pd_cluster"],
    # DEP needs two 8-GPU nodes; TP fits one: the D2 shape
    "strategy_min_gpus": {"multi_node_dep": 16},
    "strategy_overrides": {"pd_cluster": {"prefill": {"parallelism": "dep"}, "decode": {"parallelism": "dep"}}},
}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    root = tmp_path_factory.mktemp("spelling")
    path = root / "models" / f"{HF}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(RECIPE, sort_keys=False), encoding="utf-8")
    return load_catalog(root)


def state(catalog: Catalog, strict: bool = True, **req: Any) -> PageState:
    recipe = catalog.recipe(HF)
    assert recipe is not None
    return build_state(catalog, recipe, PageRequest(**req), strict=strict)


def refusal(catalog: Catalog, **req: Any) -> SelectionError:
    with pytest.raises(SelectionError) as exc:
        state(catalog, **req)
    return exc.value


def test_canonical_matches_one_choice_ignoring_case() -> None:
    assert canonical("H200", ["h100", "h200"]) == "h200"
    assert canonical("h200", ["h200", "H200"]) == "h200"  # exact wins
    assert canonical("X", ["x", "X "]) == "x"
    assert canonical("nope", ["h200"]) == "nope"  # unchanged: the refusal names what was typed


def test_ids_match_in_any_letter_case(catalog: Catalog) -> None:
    st = state(catalog, hardware="H200", strategy="PD_Cluster", add_features=("Reasoning",), decode_mode="TP",
               install="Docker")
    sel = st.selection
    assert (sel.hw_id, sel.strategy, sel.features) == ("h200", "pd_cluster", ("reasoning",))
    assert sel.pd_nodes["decode"]["parallelism"] == "tp" and st.install == "docker"


@pytest.mark.parametrize(("public", "ours"), [
    ("max_num_seqs_256", "max_seqs_256"),
    ("max_num_batched_tokens_8192", "max_batched_8k"),
    ("max_num_batched_tokens_8k", "max_batched_8k"),
    ("gpu_memory_utilization_0.95", "gpu_mem_095"),
    ("gpu_memory_utilization_095", "gpu_mem_095"),
    ("max_model_len_auto", "max_model_len_auto"),
    ("no_enable_flashinfer_autotune", "no_flashinfer_autotune"),
    ("MAX_SEQS_256", "max_seqs_256"),
])
def test_public_advanced_ids_are_aliases_of_ours(catalog: Catalog, public: str, ours: str) -> None:
    assert state(catalog, advanced=(public,)).selection.advanced == state(catalog, advanced=(ours,)).selection.advanced
    assert state(catalog, advanced=(public,)).selection.advanced[0][0] == ours


def test_every_preset_has_a_public_id() -> None:
    for option in ADVANCED_OPTIONS:
        assert public_ids(option.args), option.id


def test_an_unknown_advanced_id_is_still_refused(catalog: Catalog) -> None:
    err = refusal(catalog, advanced=("max_num_seqs_512",))
    assert err.param == "advanced" and "max_seqs_256" in err.choices


def test_public_page_url_opens_the_same_selection(catalog: Catalog) -> None:
    recipe = catalog.recipe(HF)
    assert recipe is not None
    st, notices = lenient_state(catalog, recipe, [("advanced", "max_num_seqs_256,gpu_memory_utilization_0.95")])
    assert notices == []
    assert [a for a, _ in st.selection.advanced] == ["max_seqs_256", "gpu_mem_095"]
    assert canonical_params(catalog, recipe, st) == {"advanced": "max_seqs_256,gpu_mem_095"}


def test_feature_on_and_off_at_once_is_refused(catalog: Catalog) -> None:
    err = refusal(catalog, add_features=("reasoning",), remove_features=("reasoning",))
    assert "--feature reasoning and --no-feature reasoning contradict" in err.text("cli")


def test_refusals_name_the_option_as_the_reader_types_it(catalog: Catalog) -> None:
    err = refusal(catalog, hardware="h200", strategy="pd_cluster", prefill_mode="tp", prefill_rank=3)
    assert err.text("cli") == "--prefill-rank must be 0 for a 1-node prefill pool; got 3. Valid choices: 0."
    assert str(err) == "prefill_rank must be 0 for a 1-node prefill pool; got 3. Valid choices: 0."
    err = refusal(catalog, kv_instances=3)
    assert err.text("cli").startswith("--kv-instances and --kv-instance apply to a Mooncake KV store only; "
                                      "pick one with --kv-offload.")
    # lenient notices use the URL spelling
    notices = state(catalog, strict=False, hardware="h200", strategy="pd_cluster", decode_rank=4).notices
    assert notices and notices[0].startswith("decode_rank must be between 0 and 1 for a 2-node decode pool")


# --- D2: a pool's size follows the mode actually used -------------------------------------------


def pools(st: PageState) -> dict[str, tuple[int, str]]:
    return {role: (st.selection.pd_nodes[role]["nodes"], st.selection.pd_nodes[role]["parallelism"])
            for role in ("prefill", "decode")}


def test_default_pools_take_the_dep_floor(catalog: Catalog) -> None:
    st = state(catalog, hardware="h200", strategy="pd_cluster")
    assert pools(st) == {"prefill": (2, "dep"), "decode": (2, "dep")}


def test_a_mode_override_takes_that_modes_pool_size(catalog: Catalog) -> None:
    st = state(catalog, hardware="h200", strategy="pd_cluster", decode_mode="tp")
    assert pools(st) == {"prefill": (2, "dep"), "decode": (1, "tp")}
    recipe = catalog.recipe(HF)
    assert recipe is not None
    _ctx, plan = resolve(catalog, recipe, st.selection)
    assert plan.decode.meta["nodes"] == 1 and plan.decode.meta["tp"] == 8  # type: ignore[union-attr]


def test_given_pool_nodes_still_win_over_the_mode_size(catalog: Catalog) -> None:
    st = state(catalog, hardware="h200", strategy="pd_cluster", decode_mode="tp", decode_nodes=3)
    assert pools(st)["decode"] == (3, "tp")


def test_the_mode_pill_and_the_url_agree(catalog: Catalog) -> None:
    """The URL a mode pill writes (mode only) rebuilds the same pools, and stays that short."""
    recipe = catalog.recipe(HF)
    assert recipe is not None
    st, notices = lenient_state(catalog, recipe, [("hardware", "h200"), ("strategy", "pd_cluster"),
                                                  ("decode_mode", "tp")])
    assert notices == [] and pools(st)["decode"] == (1, "tp")
    assert canonical_params(catalog, recipe, st) == {"strategy": "pd_cluster", "decode_mode": "tp"}



# --- invariants ------------------------------------------------------------------------------------

HARDWARE = ["h200", "b200", "mi355x", "rtx_pro_6000", "tpu9000"]
STRATEGIES = ["single_node_tp", "multi_node_tp", "multi_node_dep", "pd_cluster", "nope"]


def _cased(draw: st.DrawFn, word: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    return "".join(c.upper() if f else c for c, f in zip(word, flips, strict=True))


@st.composite
def requests(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request and the same request with every id in a random letter case."""
    req: dict[str, Any] = {}
    if draw(st.booleans()):
        req["hardware"] = draw(st.sampled_from(HARDWARE))
    if draw(st.booleans()):
        req["strategy"] = draw(st.sampled_from(STRATEGIES))
    if draw(st.booleans()):
        req["decode_mode"] = draw(st.sampled_from(["tp", "tep", "dep"]))
    for key in ("decode_nodes", "decode_rank", "nodes", "kv_instances"):
        if draw(st.booleans()):
            req[key] = draw(st.integers(-1, 18))
    if draw(st.booleans()):
        req["advanced"] = (draw(st.sampled_from(["max_seqs_256", "max_num_seqs_256", "dcp_8", "bogus"])),)
    if draw(st.booleans()):
        req["add_features"] = ("reasoning",)
    cased = {k: (_cased(draw, v) if isinstance(v, str) else
                 tuple(_cased(draw, x) for x in v) if isinstance(v, tuple) else v) for k, v in req.items()}
    return req, cased


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=requests())
def test_letter_case_never_changes_the_outcome_and_messages_are_spelled(catalog: Catalog,
                                                                         pair: tuple[dict, dict]) -> None:
    req, cased = pair
    plain = state(catalog, strict=False, **req)
    assert state(catalog, strict=False, **cased).selection == plain.selection
    assert all("\x00" not in n for n in plain.notices)
    try:
        strict = state(catalog, **cased)
    except SelectionError as err:
        assert "\x00" not in err.text("cli") and "\x00" not in str(err)
        assert err.text("cli") != str(err) or "_" not in err.param  # an option named in the message is spelled
    else:
        assert strict.selection == plain.selection
