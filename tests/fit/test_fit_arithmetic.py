"""KV bytes per token, capacity and concurrency for real model configs, each worked by hand.

Budgets are pinned with ``--kv-cache-memory-bytes`` (the shape's
``kv_cache_memory_bytes``) so the arithmetic is tested apart from the overhead model.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from vllm_recipes.catalog.architecture_facts import HostTable
from vllm_recipes.fit.architecture import Architecture, architecture_from_hf_config
from vllm_recipes.fit.memory import (
    GIB,
    ProcessShape,
    fit_process,
    kv_bytes_per_token,
    moe_workspace,
    weights_per_gpu,
)
from vllm_recipes.fit.sources import architecture_from_file
from vllm_recipes.fit.vllm_rules import BatchDefaults, batch_defaults, rules_for

DATA = Path(__file__).parent / "data"

TEN_GIB = 10 * GIB


def test_llama3_8b_gqa(arch: dict[str, Architecture]) -> None:
    """Llama-3-8B: 32 layers, 8 KV heads of 128, bf16.

    bytes/token = 2 (K,V) x 32 x 8 x 128 x 2 B = 131,072; at TP4 each GPU holds 2 KV heads: 32,768.
    10 GiB = 10,737,418,240 B / (131,072 x 16) = 5,120 blocks = 81,920 tokens.
    One 8,192-token request = 8,192 x 131,072 = 1 GiB, so 10 fit.
    """
    a = arch["llama3_8b"]
    assert a.attention == "gqa" and a.num_kv_heads == 8 and a.head_dim == 128
    assert kv_bytes_per_token(a, ProcessShape()) == 131_072
    assert kv_bytes_per_token(a, ProcessShape(tp=4)) == 32_768
    f = fit_process(a, 15, 80, ProcessShape(kv_cache_memory_bytes=TEN_GIB), 8192)
    assert f.kv_tokens == 81_920
    assert f.concurrency == 10 and f.starts  # max-model-len 8,192 (the model's) fits


def test_deepseek_v3_mla_not_split_by_tp(arch: dict[str, Architecture]) -> None:
    """DeepSeek-V3: MLA, 61 layers, latent 512 + rope 64.

    bf16: 61 x 576 x 2 B = 70,272 bytes/token on every TP rank (one latent per token, not split).
    fp8 on a dense MLA backend: 576 B per layer (``MLAAttentionSpec.page_size_bytes``; the 656-byte
    ``fp8_ds_mla`` layout is only for sparse MLA): 61 x 576 = 35,136.
    50 GiB at fp8, block 64: 53,687,091,200 // (576 x 64 x 61) = 23,874 blocks = 1,527,936 tokens;
    one 131,072-token request takes 2,048 blocks, so 11 fit.
    """
    a = arch["deepseek_v3"]
    assert a.attention == "mla" and not a.sparse_mla
    assert kv_bytes_per_token(a, ProcessShape()) == kv_bytes_per_token(a, ProcessShape(tp=8)) == 70_272
    shape = ProcessShape(tp=8, kv_cache_dtype="fp8", block_size=64, kv_cache_memory_bytes=50 * GIB)
    assert kv_bytes_per_token(a, shape) == 35_136
    f = fit_process(a, 640, 141, shape, 131_072, release="0.11")
    assert f.kv_tokens == 1_527_936
    assert f.concurrency == 11


def test_sparse_mla_pages_and_indexer(arch: dict[str, Architecture]) -> None:
    """DeepSeek-V3.2-style sparse MLA: at fp8 the 656-byte fp8_ds_mla page (512 fp8 + 4 fp32 scales +
    64 bf16 rope) plus the indexer's 128 fp8 values + one fp32 scale = 132 B per token per layer."""
    cfg = {**_config("deepseek_v3"), "index_head_dim": 128, "index_topk": 2048}
    a = architecture_from_hf_config(cfg)
    assert a.sparse_mla and a.indexer_bytes == 132
    assert kv_bytes_per_token(a, ProcessShape(kv_cache_dtype="fp8")) == 61 * (656 + 132)


def _config(name: str) -> dict[str, object]:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parent / "data" / f"{name}.json").read_text())


def test_gpt_oss_sliding_window_hybrid(arch: dict[str, Architecture]) -> None:
    """gpt-oss-120b: 36 layers alternating sliding (window 128) / full, 8 KV heads of 64, bf16.

    Two KV-cache groups of 18 layers share one pool: 10 GiB // (2,048 B x 16 x 18) = 18,204 blocks;
    0.11 logs 18,204 // 2 x 16 = 145,632 tokens (= budget / 73,728 B per token, every layer counted).
    A request of 8,192 tokens takes 512 blocks in the full group and, in the sliding group, the window
    - 1 plus the 8,192 batched tokens capped at the request, plus one block: 513
    (``SlidingWindowSpec.max_memory_usage_bytes``): 18,204 // 1,025 = 17 requests.
    """
    a = arch["gpt_oss_120b"]
    assert (a.sliding_window, a.sliding_window_layers, a.full_layers) == (128, 18, 18)
    shape = ProcessShape(kv_cache_memory_bytes=TEN_GIB)
    assert kv_bytes_per_token(a, shape) == 73_728
    f = fit_process(a, 61, 80, shape, 8192, release="0.11")
    assert (f.num_blocks, f.kv_groups, f.kv_tokens, f.concurrency) == (18_204, 2, 145_632, 17)
    # the hybrid manager off (e.g. --disable-hybrid-kv-cache-manager): one group of 36 full layers
    off = fit_process(a, 61, 80, replace(shape, hybrid_kv=False), 8192, release="0.11")
    assert (off.kv_groups, off.concurrency) == (1, 10 * GIB // (36 * 2048 * 8192))


def test_gpt_oss_120b_published_startup_figure(arch: dict[str, Architecture]) -> None:
    """vLLM logs 78,384 KV tokens for gpt-oss-120b on one 80 GB GPU with a 5.38 GiB KV budget.

    5.38 GiB = 5,776,731,013 B // (2,048 B x 16 x 18) = 9,793 blocks // 2 groups x 16 = 78,336 tokens: within 0.1%
    (the log rounds the budget to two decimals).
    """
    a = arch["gpt_oss_120b"]
    f = fit_process(a, 61, 80, ProcessShape(kv_cache_memory_bytes=int(5.38 * GIB)), release="0.11")
    assert f.kv_bytes_per_token == 73_728
    assert f.kv_tokens == pytest.approx(78_384, rel=0.001)


def test_capacity_meaning_changed_in_0_25(arch: dict[str, Architecture]) -> None:
    """From 0.25 "GPU KV cache size" is Maximum concurrency x max_model_len (``get_kv_cache_capacity``):
    for gpt-oss at 131,072, blocks per request = 8,192 (full) + ceil((127 + 8,192) / 16) + 1 = 521."""
    a = arch["gpt_oss_120b"]
    shape = ProcessShape(kv_cache_memory_bytes=TEN_GIB)
    new = fit_process(a, 61, 80, shape, release="0.33")
    assert new.concurrency_at_max_len == pytest.approx(18_204 / (8_192 + 521))
    assert new.kv_tokens == int(18_204 / (8_192 + 521) * 131_072)
    assert new.kv_tokens_per_group == fit_process(a, 61, 80, shape, release="0.11").kv_tokens


def test_nemotron_h_mamba_hybrid_state_per_sequence(arch: dict[str, Architecture]) -> None:
    """Nemotron-H-8B-class: 4 attention layers (8 KV heads of 128) and 23 Mamba-2 layers.

    Mamba-2 state per layer per sequence (d_inner = 128 heads x 64 = 8,192, 8 groups of state 128, conv 4):
    conv (4-1) x (8,192 + 2 x 8 x 128) = 30,720 + SSM 128 x 64 x 128 = 1,048,576 -> x 2 B = 2,158,592 B.
    vLLM raises the attention block until a page holds it: 16 x ceil(2,158,592 / (16 x 4,096)) = 528 tokens,
    page 2,162,688 B. Groups of 4 layers: 1 attention + ceil(23/4) = 6 mamba = 7 groups;
    10 GiB // (2,162,688 x 4) = 1,241 blocks; 0.11 logs 1,241 // 7 x 528 = 93,456 tokens.
    An 8,192-token request: ceil(8,192 / 528) = 16 attention blocks + 6 state blocks: 1,241 // 22 = 56.
    """
    a = arch["nemotron_h_8b"]
    assert (a.attention_layers, a.linear_layers, a.linear_state_bytes) == (4, 23, 2_158_592)
    shape = ProcessShape(kv_cache_memory_bytes=TEN_GIB)
    assert kv_bytes_per_token(a, shape) == 16_384
    f = fit_process(a, 15, 80, shape, 8192, release="0.11")
    assert (f.block_size, f.num_blocks, f.kv_groups) == (528, 1_241, 7)
    assert (f.kv_tokens, f.concurrency) == (93_456, 56)


def test_weights_split_by_tp_pp_and_ep() -> None:
    """100 GiB, 90% routed experts: TP2 x DP4 with EP puts 10/2 + 90/8 = 16.25 GiB on a GPU;
    without EP the experts split by TP only: 10/2 + 90/2 = 50; PP2 halves it again."""
    a = Architecture(num_layers=4, num_kv_heads=1, head_dim=64, expert_fraction=0.9)
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, dp=4, expert_parallel=True)) == 16.25 * GIB
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, dp=4)) == 50 * GIB
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, pp=2)) == 25 * GIB
    assert weights_per_gpu(a, 100, ProcessShape(tp=2, cpu_offload_gib=20)) == 30 * GIB


def test_host_tables_leave_the_gpu_only_when_offloaded() -> None:
    """DeepSeek-V4.1-style Engram tables: 188.8 GiB split by TP unless their flag says cpu_offload."""
    a = Architecture(num_layers=4, num_kv_heads=1, head_dim=64,
                     host_tables=(HostTable(188.8, "--engram-config", '"cpu_offload":true'),))
    resident = weights_per_gpu(a, 478.8, ProcessShape(tp=4))
    off = weights_per_gpu(a, 478.8, ProcessShape(tp=4, table_flags=(("--engram-config", '{"cpu_offload":true}'),)))
    assert resident / GIB == pytest.approx(478.8 / 4)
    assert off / GIB == pytest.approx(290 / 4)


def test_budget_is_memory_times_utilization_minus_the_overhead_model(arch: dict[str, Architecture]) -> None:
    """Llama-3-8B (14.96 GiB) on one 80 GiB GPU at vLLM's default 0.9.

    Profiling peak = the larger of the forward of 8,192 tokens (8,192 x 2 B x (2 x 4,096 + max(attention
    (2 x 32 + 2 x 8) x 128 + 4,096, MLP 3 x 14,336)) = 838,860,800 B) and the sampler warm-up (1,024 rows x 128,256 x 14 B = 1,838,678,016 B; 28 B per
    logit while 0.12 to 0.16 sort the vocabulary); non-torch 0.15 GiB; CUDA graphs subtracted only from
    0.20 (0.2 + 32 x 0.012 GiB).
    """
    a = arch["llama3_8b"]
    new = fit_process(a, 14.96, 80, ProcessShape(), release="0.33")
    act, non_torch, graphs = new.activation, new.non_torch, new.cuda_graphs
    assert act == 1024 * 128_256 * 14 and non_torch == 0.15 * GIB
    assert fit_process(a, 14.96, 80, ProcessShape(), release="0.15").activation == 1024 * 128_256 * 28
    assert graphs == pytest.approx((0.2 + 32 * 0.012) * GIB)
    assert fit_process(a, 14.96, 80, ProcessShape(), release="0.11").cuda_graphs == 0.0
    f = fit_process(a, 14.96, 80, ProcessShape(), release="0.11")
    assert f.sampler == 1024 * 128_256 * 14
    assert f.kv_budget == pytest.approx(72 * GIB - 14.96 * GIB - f.sampler - non_torch)
    assert f.forward == 8192 * 2 * (2 * 4096 + 3 * 14336)
    # at TP 4 the MLP's share is split, the layer's hidden vectors are not
    assert fit_process(a, 14.96, 80, ProcessShape(tp=4), release="0.11").forward == \
        8192 * 2 * (2 * 4096 + max((2 * 8 + 2 * 2) * 128 + 4096, 3 * 14336 / 4))
    eager = fit_process(a, 14.96, 80, ProcessShape(tp=2, enforce_eager=True))
    assert (eager.non_torch, eager.cuda_graphs) == (0.75 * GIB, 0.0)


def test_batch_defaults_per_release() -> None:
    """``EngineArgs._set_default_args``: A100 and small GPUs 2,048 / 256; >= 70 GiB 8,192 / 1,024;
    >= 160 GiB 16,384 from 0.28; GB10 stays small from 0.29."""
    assert batch_defaults(79.2, "A100 80GB") == BatchDefaults(256, 2048)
    assert batch_defaults(79.2, "H100") == BatchDefaults(1024, 8192)
    assert batch_defaults(178, "B200", rules_for("0.25")) == BatchDefaults(1024, 8192)
    assert batch_defaults(178, "B200", rules_for("0.28")) == BatchDefaults(1024, 16384)
    assert batch_defaults(119.7, "NVIDIA GB10", rules_for("0.33")) == BatchDefaults(256, 2048)
    assert batch_defaults(119.7, "NVIDIA GB10", rules_for("0.28")) == BatchDefaults(1024, 8192)


def test_pipeline_parallel_need_not_divide_the_layers(arch: dict[str, Architecture]) -> None:
    """vLLM splits 27 layers over PP 2 as 14 + 13; the most loaded stage holds 14 layers' KV."""
    a = replace(arch["llama3_8b"], num_layers=27)
    assert kv_bytes_per_token(a, ProcessShape(pp=2)) == 14 * 2 * 8 * 128 * 2


def test_eagle_draft_layer_joins_the_kv_pool(arch: dict[str, Architecture]) -> None:
    """An EAGLE draft layer is one more attention layer in the pool: 33 per token for an 8B target."""
    a = arch["llama3_8b"]
    assert kv_bytes_per_token(a, ProcessShape(spec_method="eagle3")) == 33 * 2 * 8 * 128 * 2


def test_verdict_and_quantified_levers(arch: dict[str, Architecture]) -> None:
    """Llama-3-8B at its 8,192 context needs 1 GiB of KV; a 0.5 GiB budget does not start.
    Levers: fp8 KV (halves the request: starts), the longest fitting context (0.5 GiB / 131,072 B
    = 4,096 tokens), CPU offload of the 1 GiB deficit (rounded up: 1 GiB)."""
    a = arch["llama3_8b"]
    f = fit_process(a, 15, 80, ProcessShape(kv_cache_memory_bytes=GIB // 2))
    assert not f.starts
    levers = {lv.kind: lv for lv in f.levers}
    assert levers["fp8_kv"].starts and levers["fp8_kv"].tokens == 2 * f.kv_tokens
    assert levers["max_model_len"].change == "--max-model-len 4096"
    assert levers["cpu_offload"].change == "--cpu-offload-gb 1"
    assert "tensor_parallel" in levers


def test_max_num_seqs_caps_concurrency(arch: dict[str, Architecture]) -> None:
    a = arch["llama3_8b"]
    f = fit_process(a, 15, 80, ProcessShape(kv_cache_memory_bytes=TEN_GIB, max_num_seqs=4), 8192)
    assert (f.concurrency, f.concurrency_uncapped) == (4, 10)


def test_compressed_sparse_reports_estimate_and_bound() -> None:
    """DeepSeek-V4-Flash facts: 3,513.6 elements/token estimate, 35,136 bound, fp8 KV.
    10 GiB, block 256: estimate floor(10,737,418,240 / (3,513.6 x 256)) x 256 = 3,055,872 tokens;
    bound floor(10,737,418,240 / (35,136 x 256)) x 256 = 305,408 tokens."""
    a = Architecture(num_layers=0, attention="compressed_sparse", kv_elements_per_token=3513.6,
                     kv_elements_per_token_max=35136)
    f = fit_process(a, 155.5, 141, ProcessShape(kv_cache_dtype="fp8", block_size=256, kv_cache_memory_bytes=TEN_GIB))
    assert not f.exact
    assert (f.kv_tokens, f.kv_tokens_bound) == (3_055_872, 305_408)
    assert any("not modelled exactly" in n for n in f.notes)


def test_levers_fit_the_machine(arch: dict[str, Architecture]) -> None:
    """No twice-the-TP lever on a one-GPU box; a shorter context and fewer sequences are offered instead
    when the sampler warm-up is the start-up peak."""
    a = arch["gpt_oss_120b"]
    one = fit_process(a, 60.77, 79.2, ProcessShape(max_model_len=131_072, gpu_memory_utilization=0.85),
                      gpus_available=1, release="0.33")
    kinds = {lv.kind for lv in one.levers}
    assert "tensor_parallel" not in kinds and not one.starts
    assert {"max_model_len", "max_num_seqs"} <= kinds
    eight = fit_process(a, 60.77, 79.2, ProcessShape(), gpus_available=8, release="0.33")
    levers = {lv.kind: lv for lv in eight.levers}
    assert "tensor_parallel" in levers
    assert levers["data_parallel"].change == "--data-parallel-size 8"  # 8 replicas of one GPU each


def test_expert_share_from_the_config_not_a_fixed_share() -> None:
    """Qwen3-Coder-480B-A35B shapes (62 layers, 160 experts of width 2,560, hidden 6,144): routed experts
    are 62 x 160 x 3 x 6,144 x 2,560 = 468B of ~480B parameters (97.5%). Under DP8 + EP the dense 2.5% is
    replicated on every rank - a fixed 0.9 share would put 10% of the checkpoint on each rank."""
    cfg = {"hidden_size": 6144, "num_hidden_layers": 62, "num_attention_heads": 96, "num_key_value_heads": 8,
           "head_dim": 128, "num_experts": 160, "num_experts_per_tok": 8, "moe_intermediate_size": 2560,
           "intermediate_size": 8192, "vocab_size": 151936, "max_position_embeddings": 262144}
    a = architecture_from_hf_config(cfg)
    assert a.expert_fraction == pytest.approx(0.975, abs=0.005)
    per_rank = weights_per_gpu(a, 450, ProcessShape(dp=8, expert_parallel=True)) / GIB
    assert per_rank == pytest.approx(450 * (1 - a.expert_fraction) + 450 * a.expert_fraction / 8)
    assert per_rank < 450 * 0.1 + 450 * 0.9 / 8


def test_sampler_bytes_per_logit_follow_the_sampling_path_of_each_release() -> None:
    """FlashInfer by default up to 0.11 (14), the PyTorch sort 0.12-0.16 (28), the in-place Triton
    top-k/top-p from 0.17 (14), FlashInfer by default again from 0.25 (14)."""
    got = {r: rules_for(r).sampler_bytes_per_logit for r in ("0.10", "0.11", "0.12", "0.16", "0.17", "0.24", "0.33")}
    assert got == {"0.10": 14, "0.11": 14, "0.12": 28, "0.16": 28, "0.17": 14, "0.24": 14, "0.33": 14}


def test_the_moe_workspace_is_the_fused_experts_caches_and_stays_allocated_from_0_14() -> None:
    """gpt-oss-120b (hidden 2,880, 4 of 128 experts of width 2,880) at 8,192 batched tokens on one GPU:
    8,192 x 4 x (max(2,880, 2,880) + max(5,760, 2,880)) x 2 B; from 0.14 it adds to the sampler peak,
    before it is part of the forward only."""
    a = architecture_from_file(DATA / "gpt_oss_120b.json")
    ws = moe_workspace(a, ProcessShape(), 8192)
    assert ws == 8192 * 4 * (2880 + 5760) * 2
    assert moe_workspace(a, ProcessShape(tp=2), 8192) == 8192 * 4 * (2880 + 2880) * 2  # width 1,440 < hidden
    assert moe_workspace(a, ProcessShape(tp=2, expert_parallel=True), 8192) == ws
    new = fit_process(a, 60.77, 79.2, ProcessShape(), release="0.14", gpu_name="H100", levers=False)
    old = fit_process(a, 60.77, 79.2, ProcessShape(), release="0.11", gpu_name="H100", levers=False)
    assert new.activation == new.sampler + ws and new.moe_workspace == ws
    assert old.activation == max(old.forward + ws, old.sampler) == old.sampler
