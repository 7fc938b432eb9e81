"""One "did you mean" rule for validation, lint and the CLI (catalog.suggest.likely_meant)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vllm_recipes.catalog.suggest import likely_meant
from vllm_recipes.lint.vllm_lint import did_you_mean as lint_did_you_mean

HARDWARE = ("h100", "h200", "b200", "gb200", "mi300x", "mi355x", "rtx_pro_6000")
FLAGS = ("--max-model-len", "--max-num-seqs", "--gpu-memory-utilization", "--kv-cache-dtype",
         "--mamba-cache-dtype", "--tensor-parallel-size", "--dtype", "-tp")


@pytest.mark.parametrize(("typo", "names", "meant"), [
    ("rtx6000", HARDWARE, ["rtx_pro_6000"]),  # a distant but clear match is still offered
    ("b200_8x", HARDWARE, ["b200"]),
    ("h00", HARDWARE, ["h200", "h100"]),  # two equally close names: both
    ("h200x8", HARDWARE, ["h200"]),  # h100 is further off: not offered beside h200
    ("--gpu-mem-util", FLAGS, ["--gpu-memory-utilization"]),
    ("--kv-cache-type", FLAGS, ["--kv-cache-dtype", "--mamba-cache-dtype"]),
    ("--tp", FLAGS, ["-tp"]),  # not "--dtype" as well
    ("gaudi3", HARDWARE, []),
    ("VLLM_ATTENTION_BACKEND", ("VLLM_VIDEO_LOADER_BACKEND", "VLLM_USE_DEEP_GEMM"), []),  # only a shared prefix
])
def test_the_closest_name_and_an_about_as_close_runner_up(typo: str, names: tuple[str, ...],
                                                         meant: list[str]) -> None:
    assert likely_meant(typo, names) == meant


def test_lint_suggests_without_loading_the_validation_models() -> None:
    """``command`` lints every plan: a typo's suggestion must not cost pydantic's import."""
    code = ("import sys\nfrom vllm_recipes.lint.vllm_lint import did_you_mean\n"
            "print(did_you_mean('--gpu-mem-util', ['--gpu-memory-utilization']), 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "; did you mean --gpu-memory-utilization? False\n"


def test_lint_words_the_same_suggestions() -> None:
    assert lint_did_you_mean("--gpu-mem-util", FLAGS) == "; did you mean --gpu-memory-utilization?"
    assert lint_did_you_mean("h00", HARDWARE) == "; did you mean h200 or h100?"
    assert lint_did_you_mean("gaudi3", HARDWARE) == ""
