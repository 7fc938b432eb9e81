"""The shipped vLLM tables and the extractor that produces them.

Spot facts were checked against the releases' sources (``vllm/engine/arg_utils.py``,
``vllm/config/*.py``, ``vllm/envs.py``, ``vllm/tool_parsers/__init__.py``) when
the tables were built; a rebuild that loses one of them fails here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from vllm_recipes.lint.vllm_tables import load_tables

ROOT = Path(__file__).resolve().parents[2]
FAKE = Path(__file__).resolve().parent / "data" / "fake_vllm"
sys.path.insert(0, str(ROOT / "tools"))

import build_vllm_tables  # noqa: E402
import vllm_cli_extract  # noqa: E402

#: primary flags of ``vllm serve`` per release (one release per minor version)
FLAG_COUNTS = {
    "0.10.2": 176, "0.11.2": 196, "0.12.0": 194, "0.13.0": 195, "0.14.1": 204, "0.15.1": 207, "0.16.0": 212,
    "0.17.1": 222, "0.18.1": 225, "0.19.1": 230, "0.20.2": 239, "0.21.0": 247, "0.22.1": 261, "0.23.0": 261,
    "0.24.0": 266, "0.25.1": 270, "0.26.0": 274, "0.27.1": 282, "0.28.0": 284, "0.29.0": 292, "0.30.0": 300,
    "0.31.0": 311, "0.32.0": 316, "0.33.0": 320,
}


@pytest.fixture(scope="module")
def t():
    return load_tables()


def test_releases_and_flag_counts(t) -> None:
    assert t.releases == list(FLAG_COUNTS)
    assert {r: len(t.view(i).specs) for i, r in enumerate(t.releases)} == FLAG_COUNTS
    assert len(t.latest["flags"]) == FLAG_COUNTS["0.33.0"]


def _present(t, name: str, release: str) -> bool:
    return name in t.view(t.index_of(release)).options


def test_spot_facts_flags(t) -> None:
    # added: --attention-config in 0.13.0, --monokernel in 0.33.0
    assert not _present(t, "--attention-config", "0.12.0") and _present(t, "--attention-config", "0.13.0")
    assert t.window(t.flag_ranges("--monokernel"), t.index_of("0.32.0")) == "added in 0.33.0"
    # removed: --swap-space after 0.17.1
    assert t.window(t.flag_ranges("--swap-space"), t.index_of("0.33.0")) == "removed in 0.18.1, last in 0.17.1"
    # short aliases and negations
    assert t.view(t.index_of("0.33.0")).options["-tp"] == "--tensor-parallel-size"
    assert t.view(t.index_of("0.10.2")).options["--no-enforce-eager"] == "--enforce-eager"
    # 0.33's EnableDisableAction: --disable-prefix-caching is an alias only from 0.33.0
    assert _present(t, "--disable-prefix-caching", "0.33.0") and not _present(t, "--disable-prefix-caching", "0.32.0")
    # --disable-log-requests: its own deprecated switch in 0.10.2, an alias of --enable-log-requests in 0.33.0
    old, new = t.view(t.index_of("0.10.2")), t.view(t.index_of("0.33.0"))
    assert old.options["--disable-log-requests"] == "--disable-log-requests"
    assert old.specs["--disable-log-requests"].deprecated
    assert new.options["--disable-log-requests"] == "--enable-log-requests"


def test_spot_facts_types_and_choices(t) -> None:
    new = t.view(t.index_of("0.33.0"))
    assert new.specs["--max-num-batched-tokens"].type == "human_int"
    assert new.specs["--max-model-len"].type == "human_int_or_auto"
    assert new.specs["--cudagraph-capture-sizes"].nargs == "+"
    assert new.specs["--compilation-config"].config == "CompilationConfig"
    assert new.specs["--mm-encoder-tp-mode"].choices == ("data", "weights")
    # --kv-cache-dtype: choices until 0.32, a metavar (validated later) from 0.33 (CacheDType | str)
    changes = dict(t.flag_changes("--kv-cache-dtype"))
    assert changes["0.10.2"].choices == ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
    assert changes["0.33.0"].choices is None and "fp8" in changes["0.33.0"].known


def test_spot_facts_json_keys(t) -> None:
    # V4.1's attention key: only from 0.31.0
    assert t.spans(t.key_ranges("--attention-config", "indexer_sparse_logits")) == "0.31.0-0.33.0"
    # renamed: --compilation-config max_capture_size -> max_cudagraph_capture_size in 0.11.2
    assert t.spans(t.key_ranges("--compilation-config", "max_capture_size")) == "0.10.2"
    assert t.first_release(t.key_ranges("--compilation-config", "max_cudagraph_capture_size")) == "0.11.2"
    # nested keys of nested config classes
    assert any(k.startswith("pass_config.") for k in t.view(t.index_of("0.33.0")).keys["--compilation-config"])
    assert t.configs["AttentionConfig"]["forbid"] is True


def test_spot_facts_env_and_registries(t) -> None:
    assert t.first_release(t.env_ranges("VLLM_USE_RUST_FRONTEND")) == "0.22.1"
    assert t.first_release(t.registry_ranges("tool_call_parsers", "deepseek_v41")) == "0.30.0"
    assert "deepseek_v41" in t.view(t.index_of("0.33.0")).registries["reasoning_parsers"]


def test_index_of_and_nearest(t) -> None:
    assert t.releases[t.index_of("v0.31.0")] == "0.31.0"
    assert t.releases[t.index_of("0.27")] == "0.27.1"
    assert t.index_of("0.9.0") is None and t.index_of("latest") is None
    assert t.releases[t.nearest_index("0.40.0")] == "0.33.0"
    assert t.releases[t.nearest_index("0.5.0")] == "0.10.2"


def test_shipped_sizes_stay_small() -> None:
    base = ROOT / "src" / "vllm_recipes" / "lint" / "vllm_data"
    assert (base / "latest.json").stat().st_size < 120_000
    assert (base / "history.json").stat().st_size < 200_000


# ---- the extractor on a synthetic package tree ---------------------------------------------------

EXPECTED_FAKE: dict[str, Any] = {
    "--allowed-origins": {"kind": "json"},
    "--compilation-config": {"kind": "json", "config": "CompilationConfig", "names": ["-cc"]},
    "--cudagraph-capture-sizes": {"kind": "value", "type": "int", "nargs": "+"},
    "--dtype": {"kind": "value", "type": "str", "choices": ["auto", "bfloat16", "half"]},
    "--enable-auto-tool-choice": {"kind": "switch", "negatable": True,
                                  "names": ["--no-enable-auto-tool-choice", "--disable-auto-tool-choice"]},
    "--enable-log-requests": {"kind": "switch", "negatable": True,
                              "names": ["--no-enable-log-requests", "--disable-log-requests"]},
    "--enforce-eager": {"kind": "switch", "negatable": True, "names": ["--no-enforce-eager"]},
    "--headless": {"kind": "switch"},
    "--hf-overrides": {"kind": "json"},
    "--host": {"kind": "value", "type": "str"},
    "--max-model-len": {"kind": "value", "type": "human_int_or_auto"},
    "--model": {"kind": "value", "type": "str"},
    "--old-thing": {"kind": "switch", "deprecated": "deprecated"},
    "--port": {"kind": "value", "type": "int"},
    "--seed": {"kind": "value", "type": "int"},
    "--served-model-name": {"kind": "value", "type": "str", "nargs": "+"},
    "--swap-space": {"kind": "value", "type": "float",
                     "deprecated": "DEPRECATED: has no effect and will be removed in v10.0."},
    "--tokenizer-mode": {"kind": "value", "type": "str", "known": ["auto", "hf", "slow"]},
    "--tool-call-parser": {"kind": "value", "type": "str"},
}


def test_extractor_on_a_synthetic_package() -> None:
    table = vllm_cli_extract.extract(FAKE)
    assert table["version"] == "9.9.0"
    assert table["flags"] == EXPECTED_FAKE
    assert table["configs"] == {
        "CompilationConfig": {"forbid": True, "fields": {"mode": {"type": "int"},
                                                         "pass_config": {"config": "PassConfig"},
                                                         "cudagraph_capture_sizes": {"type": "list"}}},
        "PassConfig": {"forbid": True, "fields": {"fuse_norm_quant": {"type": "bool"},
                                                  "sp_min_token_num": {"type": "int"}}},
    }
    assert table["registries"] == {"tool_call_parsers": ["hermes", "mistral"], "reasoning_parsers": ["deepseek_r1"],
                                   "tokenizer_modes": ["auto", "hf", "slow"]}
    assert table["env"] == ["VLLM_HOST_IP", "VLLM_USE_FAKE"]


def test_history_of_two_synthetic_releases(tmp_path: Path) -> None:
    a = vllm_cli_extract.extract(FAKE)
    b = json.loads(json.dumps(a))
    b["version"] = "9.10.0"
    del b["flags"]["--swap-space"]
    b["flags"]["--dtype"]["choices"] = ["auto", "half"]
    b["configs"]["PassConfig"]["fields"] = {"fuse_norm_quant_v2": {"type": "bool"}}
    b["env"] = ["VLLM_HOST_IP"]
    h = build_vllm_tables.build([a, b])
    assert h["releases"] == ["9.9.0", "9.10.0"]
    assert h["names"]["--swap-space"] == [[0, 0]] and h["names"]["-cc"] == [[0, 1]]
    assert h["aliases"]["-cc"] == "--compilation-config"
    assert [i for i, _e in h["flags"]["--dtype"]] == [0, 1]
    assert h["flags"]["--swap-space"][-1] == [1, None]
    assert h["keys"]["--compilation-config"]["pass_config.fuse_norm_quant"] == [[0, 0]]
    assert h["keys"]["--compilation-config"]["pass_config.fuse_norm_quant_v2"] == [[1, 1]]
    assert h["env"] == {"VLLM_HOST_IP": [[0, 1]], "VLLM_USE_FAKE": [[0, 0]]}
