"""The release lint's rules one by one: tokens of one process against one release."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_recipes.lint.vllm_lint import LintTarget, choose_target, lint_tokens, split_image


def lint(tokens: list[str], env: dict[str, str] | None = None, image: str | None = "vllm/vllm-openai:latest",
         min_version: str | None = None, **kw):
    target, notes = choose_target(image, min_version, **kw)
    return notes + lint_tokens(tokens, env or {}, target)


def codes(findings) -> list[tuple[str, str]]:
    return [(f.code, f.severity) for f in findings]


def test_clean_command_has_no_findings() -> None:
    toks = ["--tensor-parallel-size", "8", "--max-model-len", "128k", "--enable-prefix-caching",
            "--compilation-config", '{"cudagraph_capture_sizes":[1,2,4],"pass_config":{}}',
            "--kv-cache-dtype", "fp8", "--tool-call-parser", "deepseek_v41", "--enable-auto-tool-choice",
            "--speculative-config", '{"method":"mtp","num_speculative_tokens":2}', "-dp", "2", "--no-enforce-eager"]
    assert lint(toks, {"VLLM_USE_DEEP_GEMM": "1", "NCCL_DEBUG": "INFO"}) == []


def test_unknown_flag_with_did_you_mean() -> None:
    (f,) = lint(["--tensor-paralel-size", "2"])
    assert (f.code, f.severity, f.subject, f.token_index) == ("vllm-unknown-flag", "error", "--tensor-paralel-size", 0)
    assert "did you mean --tensor-parallel-size" in f.message


def test_unknown_flag_removed_in_a_release_names_its_window() -> None:
    (f,) = lint(["--swap-space", "4"])
    assert f.code == "vllm-unknown-flag"
    assert "removed in 0.18.1, last in 0.17.1" in f.message


def test_pinned_tag_checks_that_release_and_names_when_a_flag_was_added() -> None:
    (f,) = lint(["--monokernel"], image="vllm/vllm-openai:v0.31.0")
    assert f.code == "vllm-unknown-flag" and "vLLM 0.31.0" in f.message and "added in 0.33.0" in f.message
    assert lint(["--swap-space", "4"], image="vllm/vllm-openai:v0.17.1") == []


def test_unknown_json_key_is_an_error_with_window_and_suggestion() -> None:
    (f,) = lint(["--compilation-config", '{"max_capture_size": 8}'])
    assert (f.code, f.severity) == ("vllm-unknown-key", "error")
    assert "removed in 0.11.2, last in 0.10.2" in f.message and "refuses to start" in f.message
    (g,) = lint(["--attention-config", '{"indexer_sparse_logit": true}'])
    assert "did you mean indexer_sparse_logits" in g.message


def test_nested_and_dotted_json_keys() -> None:
    (f,) = lint(["--compilation-config", '{"pass_config": {"no_such_pass": true}}'])
    assert f.code == "vllm-unknown-key" and f.subject == "--compilation-config pass_config.no_such_pass"
    assert lint(["--compilation-config.mode", "3"]) == []
    (g,) = lint(["--compilation-config.nope", "3"])
    assert g.code == "vllm-unknown-key"


def test_invalid_choice_type_and_json() -> None:
    assert codes(lint(["--mm-encoder-tp-mode", "dataa"])) == [("vllm-invalid-choice", "error")]
    assert codes(lint(["--tensor-parallel-size", "two"])) == [("vllm-invalid-type", "error")]
    assert codes(lint(["--gpu-memory-utilization", "high"])) == [("vllm-invalid-type", "error")]
    assert codes(lint(["--compilation-config", "{nope"])) == [("vllm-invalid-type", "error")]
    # human-readable ints where vLLM accepts them, and only there
    assert lint(["--max-num-batched-tokens", "8k", "--max-model-len", "auto"]) == []
    assert codes(lint(["--max-num-seqs", "8k"])) == [("vllm-invalid-type", "error")]


def test_arity() -> None:
    (f,) = lint(["--enable-prefix-caching", "yes"])
    assert (f.code, f.token_index) == ("vllm-arity", 1)
    (g,) = lint(["--tensor-parallel-size"])
    assert g.code == "vllm-arity" and "expects one value" in g.message
    assert lint(["--cudagraph-capture-sizes", "1", "2", "4"]) == []
    (h,) = lint(["--port", "1", "2"])
    assert h.code == "vllm-arity" and h.token_index == 2
    assert codes(lint(["stray"])) == [("vllm-arity", "error")]


def test_flag_and_value_in_one_item() -> None:
    assert codes(lint(["--max-model-len=4096"])) == [("vllm-joined-value", "warning")]  # argparse accepts it
    assert codes(lint(["--max-model-len 4096"])) == [("vllm-joined-value", "error")]
    # the dotted form is syntax vLLM documents, but the recipe engine still cannot dedupe it
    assert codes(lint(["--default-chat-template-kwargs.thinking=true"])) == [("vllm-joined-value", "warning")]
    # the joined value is still checked
    assert codes(lint(["--max-model-len=lots"])) == [("vllm-joined-value", "warning"), ("vllm-invalid-type", "error")]


def test_env_placeholders_are_skipped() -> None:
    assert lint(["--tensor-parallel-size", "$TP", "--data-parallel-address", "${HEAD_IP}",
                 "--compilation-config", "$CC_JSON"]) == []


def test_deprecated_flag_is_a_warning() -> None:
    (f,) = lint(["--disable-log-requests"], image="vllm/vllm-openai:v0.10.2")
    assert (f.code, f.severity) == ("vllm-deprecated-flag", "warning")


def test_unregistered_parser_or_backend_is_a_warning() -> None:
    (f,) = lint(["--reasoning-parser", "my_plugin_parser"])
    assert (f.code, f.severity) == ("vllm-unregistered-name", "warning") and "plugin" in f.message
    (g,) = lint(["--attention-backend", "FLASH_ATTNN"])
    assert g.code == "vllm-unregistered-name" and "did you mean FLASH_ATTN" in g.message
    (h,) = lint(["--kv-transfer-config", '{"kv_connector": "NoSuchConnector", "kv_role": "kv_both"}'])
    assert h.code == "vllm-unregistered-name"


def test_underscore_spelling_is_info() -> None:
    (f,) = lint(["--max_model_len", "4096"])
    assert (f.code, f.severity) == ("vllm-underscore", "info") and "--max-model-len" in f.message


def test_unknown_vllm_env_and_foreign_env() -> None:
    (f,) = lint([], {"VLLM_NO_SUCH_KNOB": "1", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    assert (f.code, f.severity, f.env_key) == ("vllm-unknown-env", "warning", "VLLM_NO_SUCH_KNOB")  # ignored


def test_min_version_window_for_latest_and_nightly() -> None:
    (f,) = lint(["--attention-config", '{"indexer_sparse_logits": true}'], image="vllm/vllm-openai:nightly",
                min_version="0.30.0")
    assert (f.code, f.severity) == ("vllm-min-version", "warning")
    assert "not in vLLM 0.30.0: added in 0.31.0" in f.message and "min_vllm_version 0.30.0" in f.message
    (g,) = lint([], {"VLLM_USE_RUST_FRONTEND": "1"}, image=None, min_version="0.20.0")
    assert g.code == "vllm-min-version" and "added in 0.22.1" in g.message
    # a pinned tag is the release that runs: no min-version check
    assert lint(["--monokernel"], image="vllm/vllm-openai:v0.33.0", min_version="0.30.0") == []


def test_non_stock_image_downgrades_to_info_unless_declared() -> None:
    out = lint(["--b12x-magic", "--attention-backend", "B12X_MLA_SPARSE"], {"VLLM_USE_B12X_MOE": "1"},
               image="eugr/spark-vllm-b12x:latest")
    assert {(f.code, f.severity) for f in out} == {("vllm-plugin", "info")}
    assert len(out) == 4  # the image note + flag + backend + env
    declared = lint(["--b12x-magic"], {"VLLM_USE_B12X_MOE": "1"}, image="eugr/spark-vllm-b12x:latest",
                    declared_flags=["--b12x-magic"], declared_env=["VLLM_USE_B12X_*"])
    assert codes(declared) == [("vllm-plugin", "info")]  # only the image note remains


def test_release_choice_and_notes() -> None:
    t, notes = choose_target("vllm/vllm-openai:v0.31.0", "0.20.0")
    assert t.release == "0.31.0" and t.min_view is None and notes == [] and t.badge() == "vLLM 0.31"
    t, notes = choose_target("vllm/vllm-openai:deepseekv41-flash-0909")
    assert t.release == "0.33.0" and [n.code for n in notes] == ["vllm-release"]
    t, _ = choose_target("docker.io/vllm/vllm-openai-rocm:v0.27.1")
    assert t.release == "0.27.1" and t.stock
    t, _ = choose_target("vllm/vllm-openai:v0.31.0", forced="0.20")
    assert t.release == "0.20.2"
    with pytest.raises(ValueError, match="known releases"):
        choose_target(None, forced="0.4")
    assert split_image("quay.io/ascend/vllm-ascend:v0.23.0-a5") == ("quay.io/ascend/vllm-ascend", "v0.23.0-a5")
    assert split_image("localhost:5000/vllm") == ("localhost:5000/vllm", "latest")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="-_=.abcdefgkmpstuvxyz0123456789 ${}\"'[]:,", max_size=14), max_size=8),
       st.dictionaries(st.text(alphabet="VLMABCDE_", min_size=1, max_size=12), st.just("1"), max_size=3))
def test_never_raises_and_every_finding_points_inside(tokens: list[str], env: dict[str, str]) -> None:
    target: LintTarget = choose_target("vllm/vllm-openai:latest", "0.20.0")[0]
    for f in lint_tokens(tokens, env, target):
        assert f.severity in {"error", "warning", "info"}
        assert (f.token_index is not None and 0 <= f.token_index < len(tokens)) or f.env_key in env
