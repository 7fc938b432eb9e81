"""Fuzz: random paths and query strings never produce a server error (hypothesis, ASGI client)."""

from __future__ import annotations

from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from vllm_recipes.select.params import URL_NAMES as PARAMS

HW = ["h100", "h200", "b200", "gb200", "b300", "gb300", "mi355x", "mi300x", "dgx_station_gb300", "rtx_pro_6000",
      "trillium", "xeon6", "ascend_910c", "zz"]
STRATS = ["single_node_tp", "single_node_tep", "single_node_dep", "multi_node_tp", "multi_node_tep", "multi_node_dep",
          "multi_node_tp_pp", "pd_cluster", "kv_store_centralized_mooncake", "nope"]
FEATS = ["tool_calling", "reasoning", "spec_decoding", "text_only", "encoder_parallel", "mtp", "x"]
KV = ["off", "simple", "offloading_cpu", "offloading_fs", "lmcache", "kv_store_centralized_mooncake",
      "kv_store_distributed_mooncake", "bad"]
VARIANTS = ["default", "fp8", "nvfp4", "redhat_nvfp4", "dspark", "ascend_w8a8", "zzz"]
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
NUM = st.one_of(st.integers(-3, 40).map(str), st.sampled_from(["", "1e3", "0x10", "٣", "1.5", " 2", "+1"]))


def value_for(key: str) -> st.SearchStrategy[str]:
    if key == "hardware":
        return st.one_of(st.sampled_from(HW), TEXT)
    if key == "strategy":
        return st.one_of(st.sampled_from(STRATS), TEXT)
    if key == "variant":
        return st.one_of(st.sampled_from(VARIANTS), TEXT)
    if key in ("features", "advanced"):
        return st.lists(st.sampled_from([*FEATS, "max_batched_8k", "dcp_8", "ep_weight_filter"]), max_size=5).map(
            ",".join)
    if key == "fmode":
        return st.lists(st.tuples(st.sampled_from(FEATS), st.sampled_from(["on", "off", "mtp", "x"])), max_size=3).map(
            lambda ps: ",".join(f"{a}:{b}" for a, b in ps))
    if key == "kv_offload":
        return st.one_of(st.sampled_from(KV), TEXT)
    if key in ("prefill_mode", "decode_mode"):
        return st.sampled_from(["tp", "tep", "dep", "pp", ""])
    if key == "frontend":
        return st.sampled_from(["python", "rust", "go", ""])
    if key == "install":
        return st.sampled_from(["pip", "docker", "apt"])
    if key == "router":
        return st.sampled_from(["vllm-router", "smg-grpc", "nginx"])
    if key in ("nodes", "kv_instances", "kv_instance", "prefill_nodes", "decode_nodes", "prefill_rank", "decode_rank"):
        return NUM
    return TEXT


PAIR = st.one_of(st.sampled_from((*PARAMS, "lang", "model", "q", "task", "sort", "size")).flatmap(
    lambda k: value_for(k).map(lambda v: (k, v))), st.tuples(TEXT, TEXT))
QUERY = st.lists(PAIR, max_size=8).map(lambda items: "&".join(f"{quote(k, safe='')}={quote(v, safe=',:')}"
                                                                for k, v in items))
PATHS = st.one_of(
    st.sampled_from(["/deepseek-ai/DeepSeek-V4.1-Flash", "/deepseek-ai/DeepSeek-V4-Flash", "/api/resolve",
                     "/deepseek-ai/DeepSeek-V4.1-Flash/builder", "/browse", "/", "/deepseek-ai", "/models.json"]),
    st.lists(TEXT, min_size=1, max_size=4).map(lambda segs: "/" + "/".join(quote(s, safe="") for s in segs)),
    st.lists(st.sampled_from(["deepseek-ai", "DeepSeek-V4.1-Flash", "hw", "strategies", "..", ".", "",
                              "b200.json", "models.json", "builder", "%2e%2e", "static"]), min_size=1,
             max_size=5).map(lambda segs: "/" + "/".join(segs)),
)

@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=PATHS, query=QUERY)
def test_no_server_errors(client: TestClient, path: str, query: str) -> None:
    url = path + ("?" + query if query else "")
    r = client.get("http://testserver" + url, follow_redirects=False)
    assert r.status_code < 500, (url, r.status_code, r.text[:400])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=QUERY)
def test_resolve_never_errors(client: TestClient, query: str) -> None:
    r = client.get("/api/resolve?model=deepseek-ai%2FDeepSeek-V4.1-Flash&" + query)
    assert r.status_code in (200, 400, 414), (query, r.status_code, r.text[:400])
    assert r.headers["content-type"].startswith("application/json")
