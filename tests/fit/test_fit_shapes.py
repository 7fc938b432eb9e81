"""The fit reads exactly the flags the rendered command carries."""

from __future__ import annotations

from vllm_recipes.catalog import Catalog
from vllm_recipes.fit.shape import final_flags, invocations, rendered_flags, shape_from_flags
from vllm_recipes.select.state import PageRequest, build_state
from vllm_recipes.synth.plan import Arg, Invocation, Source
from vllm_recipes.synth.resolve import resolve


def test_fast_flag_scan_equals_the_rendered_tokens_for_every_seed_selection(catalog: Catalog) -> None:
    seen = 0
    for recipe in catalog.recipes:
        for hw in ("h200", "gb200", "mi355x", "b200", "dgx_station_gb300"):
            for strategy in (None, "single_node_dep", "pd_cluster", "multi_node_tp"):
                try:
                    st = build_state(catalog, recipe, PageRequest(hardware=hw, strategy=strategy), strict=True)
                except Exception:  # not offered there: nothing to compare
                    continue
                for _role, inv in invocations(resolve(catalog, recipe, st.selection)[1]):
                    assert final_flags(inv) == rendered_flags(inv), (recipe.hf_id, hw, strategy)
                    seen += 1
    assert seen > 20


def test_last_occurrence_wins_and_dropped_flags_vanish() -> None:
    src = Source("t")
    toks = ["--max-model-len", "8192", "", "-tp", "2", "--enforce-eager", "--max-model-len=4096",
            "--tensor-parallel-size", "4", "--reasoning-parser", "x"]
    inv = Invocation("m", tuple(Arg(t, src) for t in toks), drop_flags=("--reasoning-parser",))
    flags = final_flags(inv)
    assert flags["--max-model-len"] == "4096" and flags["--tensor-parallel-size"] == "4"
    assert "--reasoning-parser" not in flags and flags["--enforce-eager"] == ""
    s = shape_from_flags("serve", {**flags, "--max-model-len": "128k"})
    assert (s.tp, s.enforce_eager, s.max_model_len) == (4, True, 128_000)
    assert shape_from_flags("serve", {"--max-model-len": "auto"}).max_model_len_auto


def test_the_core_does_no_io() -> None:
    """Only the edges (``sources``, ``probe``) touch files, processes or the Hugging Face library."""
    import ast
    from pathlib import Path

    import vllm_recipes.fit as pkg

    io_modules = {"os", "subprocess", "shutil", "pathlib", "huggingface_hub", "socket", "urllib"}
    for path in Path(pkg.__file__).parent.glob("*.py"):
        if path.stem in ("sources", "probe"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not names & io_modules, (path.name, names & io_modules)
