"""``fit`` and ``perf`` name their GPUs by the rule ``/api/fit`` and the MCP ``fit`` tool use
(``service.fit.fit_target``): one copy, its refusals spelled for each reader. Before, the CLI kept its own
copy, and ``--gpus`` alone said "--gpus needs --gpu-memory GB or --gpu NAME." where the API said
"Parameter 'gpus' needs gpu_memory or gpu."."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from click.testing import Result

from vllm_recipes.catalog import Catalog
from vllm_recipes.cli.fit_cmds import target_from_options
from vllm_recipes.service import Query, QueryError
from vllm_recipes.service.fit import fit_answer, fit_target

V4 = "deepseek-ai/DeepSeek-V4-Flash"


@pytest.mark.parametrize(("gpu", "gpu_memory", "gpus"), [("H100", None, 4), ("RTX 4090", None, None),
                                                         ("RTX 4090", 24.0, 2), (None, 16.0, 2), (None, 24.0, None)])
def test_the_cli_names_the_gpus_the_site_does(catalog: Catalog, gpu: str | None, gpu_memory: float | None,
                                              gpus: int | None) -> None:
    kw: dict[str, Any] = {"gpu": gpu, "gpu_memory": gpu_memory, "gpus": gpus, "hardware": None}
    assert target_from_options(catalog, kw) == fit_target(catalog, gpu, gpu_memory, gpus)


@pytest.mark.parametrize("command", [["fit"], ["fit", V4], ["perf", V4, "--isl", "1000", "--osl", "100"]])
def test_gpus_alone_is_refused_in_the_cli_spelling(run_cli: Callable[..., Result], command: list[str]) -> None:
    res = run_cli(*command, "--gpus", "2")
    assert res.exit_code == 2
    assert res.stderr == "Error: --gpus needs --gpu-memory (GB per GPU) or --gpu (a GPU name).\n"


def test_gpus_alone_is_refused_in_the_api_spelling(catalog: Catalog) -> None:
    with pytest.raises(QueryError) as err:
        fit_answer(catalog, Query(V4), gpus=2)
    assert err.value.to_dict() == {"error": "gpus needs gpu_memory (GB per GPU) or gpu (a GPU name).",
                                   "param": "gpus", "choices": []}


def test_an_unknown_gpu_suggests_the_closest_names(run_cli: Callable[..., Result], catalog: Catalog) -> None:
    res = run_cli("fit", V4, "--gpu", "RTX 5900")
    assert res.exit_code == 2
    assert res.stderr == ("Error: Unknown GPU 'RTX 5900'; give its memory with --gpu-memory GB. "
                          "Did you mean: RTX 5090, RTX 5080, RTX 4090, RTX 4080, RTX 3090?\n")
    with pytest.raises(QueryError) as err:
        fit_target(catalog, "RTX 5900", None, None)
    assert str(err.value) == ("unknown GPU 'RTX 5900'; give its memory with --gpu-memory GB. "
                              "Valid choices: RTX 5090, RTX 5080, RTX 4090, RTX 4080, RTX 3090.")
