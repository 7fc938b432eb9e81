"""The fit reads exactly the flags the rendered command carries."""

from __future__ import annotations

from vllm_recipes.fit.shape import final_flags, shape_from_flags
from vllm_recipes.synth.plan import Arg, Invocation, Source


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


def test_hybrid_kv_manager_per_release_and_connector() -> None:
    """``VllmConfig.__post_init__``: before 0.22 any KV connector or KV events turn the hybrid manager off;
    from 0.22 only connectors without ``SupportsHMA``; the explicit flags always win."""
    from vllm_recipes.fit.shape import hybrid_kv_on

    nixl = {"--kv-transfer-config": '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'}
    lmcache = {"--kv-transfer-config": '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'}
    assert hybrid_kv_on({}) and hybrid_kv_on({}, (0, 11))
    assert not hybrid_kv_on(nixl, (0, 11)) and hybrid_kv_on(nixl, (0, 33))
    assert not hybrid_kv_on(lmcache, (0, 33))
    assert not hybrid_kv_on({"--kv-events-config": "{}"}, (0, 11)) and hybrid_kv_on({"--kv-events-config": "{}"},
                                                                                      (0, 33))
    assert not hybrid_kv_on({"--disable-hybrid-kv-cache-manager": ""}, (0, 33))


def test_speculative_config_adds_draft_layers() -> None:
    from vllm_recipes.fit.shape import speculative

    assert speculative({"--speculative-config": '{"method":"eagle3","model":"x/eagle3","num_speculative_tokens":3}'}) \
        == ("eagle3", 0)
    assert speculative({"--speculative-config": '{"method":"ngram","num_speculative_tokens":3}'}) == ("ngram", 0)
    assert speculative({"--speculative-config": '{"model":"yuhuili/EAGLE-LLaMA3-Instruct-8B"}'})[0] == "eagle"
    assert speculative({}) == ("", 0)
