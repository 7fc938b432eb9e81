"""The page's own words for fit and deploy reasons (web/wording.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vllm_recipes.web.wording import (
    CLI_TEXT,
    deploy_refusal,
    fit_unknown,
    page_lever,
    page_sentence,
    page_warning,
)

PLAIN = st.sampled_from(["Compose runs on one machine", "the manifest cannot request its GPUs",
                         "vLLM picks the longest context that fits", "Kubernetes schedules GPUs per pod"])
CLI = st.sampled_from(["use --to k8s or --to slurm", "pass --hf-config PATH", "set it in taxonomy.yaml",
                       "use `vllm-recipes command` per node", "(or --prefill-nodes 0 --decode-nodes 0)"])
SEP = st.sampled_from(["; ", ". ", ": ", " "])


@given(st.lists(st.tuples(st.one_of(PLAIN, CLI), SEP), min_size=1, max_size=6))
def test_no_command_line_words_survive(parts: list[tuple[str, str]]) -> None:
    message = "".join(c + s for c, s in parts).strip()
    out = page_sentence(message)
    assert not CLI_TEXT.search(out)
    for target in ("k8s", "compose", "slurm", "vllm-config"):
        assert not CLI_TEXT.search(deploy_refusal(target, message))


def test_real_refusals_read_as_page_words() -> None:
    compose = ("Compose runs on one machine and this selection spans 4 nodes; use --to k8s or --to slurm "
               "(or the co-located PD layout: --prefill-nodes 0 --decode-nodes 0).")
    assert deploy_refusal("compose", compose) == (
        "Compose runs on one machine and this selection spans 4 nodes. "
        "Try the Kubernetes, Slurm or vLLM config tab, or another Strategy or Nodes pill.")
    k8s = ("hardware profile 'xeon6' declares no device_resource, so the manifest cannot request its "
           "accelerators; add `device_resource: <vendor>/<name>` to it in taxonomy.yaml.")
    assert deploy_refusal("k8s", k8s).startswith("Hardware profile 'xeon6' declares no device_resource, so the "
                                                 "manifest cannot request its accelerators. Try the Compose")
    assert page_sentence("--max-model-len auto: vLLM picks the longest context that fits.") == \
        "vLLM picks the longest context that fits."


def test_fit_levers_and_unknown_architecture() -> None:
    assert page_lever("max_model_len", "the longest request that fits is 4,096 tokens") == \
        "A shorter context (the context pills below): the longest request that fits is 4,096 tokens"
    assert "--" not in page_lever("tensor_parallel", "16 GPUs per replica: weights 7.5 GiB/GPU, 1,000 tokens")
    unknown = fit_unknown("the architecture of x/y is unknown: add model.architecture_facts to the recipe, "
                          "pass --hf-config PATH, or put its config.json in the local Hugging Face cache")
    assert "architecture" in unknown and not CLI_TEXT.search(unknown)


def test_fit_warnings_keep_their_meaning_in_page_words() -> None:
    said = page_warning("prefill pool: --max-model-len 1,048,576 is longer than the model's context of 262,144 tokens")
    assert said == "Prefill pool: the longest request (1,048,576 tokens) is longer than the model's context of 262,144 tokens."
    assert page_warning("tensor-parallel size 12 does not divide the model's 32 attention heads") == \
        "Tensor-parallel size 12 does not divide the model's 32 attention heads."
