"""Properties of the engine over random selections of the bundled seed recipes.

(a) the shell text and the argv of every process agree under bash-style word splitting
    (also ``docker run`` text vs docker argv);
(b) resolving is deterministic;
(c) a shell expands nothing in a serve command except bare ``$NAME`` placeholders;
(d) ``explain`` accounts for every final argv token exactly once and every env key.
"""

from __future__ import annotations

import functools
import re
import shlex
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllm_recipes.catalog import Catalog, Recipe, load_catalog
from vllm_recipes.jsvalues import get, is_map
from vllm_recipes.render.explain import explain_plan
from vllm_recipes.render.rendering import rendering_object
from vllm_recipes.select.advanced import ADVANCED_OPTIONS
from vllm_recipes.select.defaults import list_compatible_hardware
from vllm_recipes.select.gates import is_listed, offered_strategies
from vllm_recipes.select.selection import Selection
from vllm_recipes.synth.plan import KvStorePlan, MultiNodePlan, PdPlan, SinglePlan
from vllm_recipes.synth.resolve import resolve

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Values that stress quoting (no backslash-newline: the text is joined on "\\\n" before splitting).
NASTY_VALUES = ["$HOME", "$FOO_BAR", "${X}", "$(id)", "`id`", "a b", "it's", "'", '"q"', "\\", "a\nb", "x\n",
                "*", "~/x", "a;b", "a|b", "a&b", "<x>", "!x", "#c", "[1]", '{"a":[1,2]}', "é", "0.95", "", "-1",
                "--", "=", ":", "%s", "$", "$1", "a$B"]
SAFE_FLAGS = ["--adv-a", "--adv-b", "--max-num-seqs", "--tensor-parallel-size", "-x"]


@functools.cache
def catalog() -> Catalog:
    return load_catalog()


def recipes() -> list[Recipe]:
    return [r for r in catalog().recipes if not r.is_omni]


def hardware_for(recipe: Recipe, vk: str) -> list[str]:
    cat = catalog()
    variant = recipe.variants[vk]
    return [hw for hw in list_compatible_hardware(cat.hardware_profiles, variant, recipe.data)
            if is_listed(recipe.data, hw, cat.hardware_profiles[hw])]


def serving_strategies(recipe: Recipe) -> list[str]:
    strategies = catalog().strategies
    return [s for s in offered_strategies(recipe.data)
            if is_map(strategies.get(s)) and strategies[s].get("deploy_type") != "kv_store_lb"]


pd_role = st.one_of(
    st.integers(0, 4),
    st.fixed_dictionaries({}, optional={"nodes": st.integers(0, 4), "rank": st.integers(0, 5),
                                        "parallelism": st.sampled_from(["tp", "tep", "dep"])}),
)
nasty_text = st.one_of(st.sampled_from(NASTY_VALUES),
                       st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\n\r\x00"), max_size=8))


@st.composite
def selections(draw: st.DrawFn) -> tuple[Recipe, Selection]:
    recipe = draw(st.sampled_from(recipes()))
    vk = draw(st.sampled_from([k for k in recipe.variants if hardware_for(recipe, k)]))
    hw = draw(st.sampled_from(hardware_for(recipe, vk)))
    strategy = draw(st.sampled_from(serving_strategies(recipe)))
    feats = list(recipe.data.get("features") or {})
    features = tuple(draw(st.permutations(feats))[:draw(st.integers(0, len(feats)))])
    if draw(st.booleans()) and features:
        features = (*features, draw(st.sampled_from(features)))  # duplicates are legal
    modes = []
    for f in feats:
        fm = get(recipe.data["features"][f], "modes")
        if is_map(fm) and draw(st.booleans()):
            modes.append((f, draw(st.sampled_from(list(fm)))))
    kv_ids = [None, *catalog().kv_offload_options,
              *(k for k, s in catalog().strategies.items() if s.get("deploy_type") == "kv_store_lb")]
    kv = draw(st.sampled_from(kv_ids))
    kv_instances = draw(st.one_of(st.none(), st.integers(1, 4),
                                  st.fixed_dictionaries({"count": st.integers(1, 4), "current": st.integers(0, 4)})))
    pd_nodes = None
    if strategy == "pd_cluster" and draw(st.booleans()):
        pd_nodes = {"prefill": draw(pd_role), "decode": draw(pd_role)}
    advanced: list[tuple[str, tuple[str, ...]]] = []
    for opt in draw(st.lists(st.sampled_from(ADVANCED_OPTIONS), max_size=2, unique=True)):
        advanced.append((opt.id, opt.args))
    if draw(st.booleans()):
        tokens = draw(st.lists(st.tuples(st.sampled_from(SAFE_FLAGS), nasty_text), max_size=3))
        advanced.append(("arg", tuple(t for pair in tokens for t in pair)))
    return recipe, Selection(
        variant_key=vk, hw_id=hw, strategy=strategy, node_count=draw(st.integers(1, 4)), features=features,
        feature_modes=tuple(modes), advanced=tuple(advanced), pd_nodes=pd_nodes, kv_offload=kv,
        kv_instances=kv_instances, frontend=draw(st.sampled_from([None, "python", "rust"])),
        pd_router=draw(st.sampled_from([None, "vllm-router", "smg-grpc"])) if strategy == "pd_cluster" else None,
    )


# --- helpers ----------------------------------------------------------------------------------

def words(text: str) -> list[str]:
    """Bash-style word splitting of a command text (continuations joined, leading comment dropped)."""
    if text.startswith("# "):
        text = text.split("\n", 1)[1]
    return shlex.split(text.replace("\\\n", ""))


def processes(obj: dict[str, Any]) -> list[tuple[str, list[str], dict[str, Any]]]:
    """``(command text, argv, env)`` of every vLLM serve process in a rendering object."""
    dt = obj["deploy_type"]
    if dt == "pd_cluster":
        return [(obj[r]["command"], obj[r]["argv"], obj[r]["env"]) for r in ("prefill", "decode")]
    if dt == "kv_store_lb":
        out = [(obj["vllm_command"], obj["vllm_argv"], obj["env"])]
        for c, a in zip(obj["vllm_worker_commands"] or [], obj["vllm_worker_argvs"] or [], strict=True):
            out.append((c, a, obj["env"]))
        return out
    if "head_command" in obj:
        return [(obj["head_command"], obj["head_argv"], obj["env"]),
                *((c, a, obj["env"]) for c, a in zip(obj["worker_commands"], obj["worker_argvs"], strict=True))]
    return [(obj["command"], obj["argv"], obj["env"])]


def dockers(obj: dict[str, Any]) -> list[tuple[str, list[str]]]:
    dt = obj["deploy_type"]
    if dt == "pd_cluster":
        return [(obj[r]["docker_command"], obj[r]["docker_argv"]) for r in ("prefill", "decode")]
    if dt == "kv_store_lb":
        return [(obj["vllm_docker_command"], obj["vllm_docker_argv"]),
                *zip(obj["vllm_worker_docker_commands"] or [], obj["vllm_worker_docker_argvs"] or [], strict=True)]
    if "head_command" in obj:
        return [(obj["head_docker_command"], obj["head_docker_argv"]),
                *zip(obj["worker_docker_commands"], obj["worker_docker_argvs"], strict=True)]
    return [(obj["docker_command"], obj["docker_argv"])]


def routers(obj: dict[str, Any]) -> list[str]:
    r = obj.get("router")
    return [r["command"]] if isinstance(r, dict) else []


def unquoted_words(text: str) -> list[tuple[str, bool]]:
    """Split raw text into shell words: ``(unquoted characters, whether any part was quoted)``.

    Only single quotes are produced by the engine; ``'\\''`` inside a value closes the quote,
    adds an escaped ``'`` and reopens it.
    """
    text = text.replace("\\\n", " ")
    out: list[tuple[str, bool]] = []
    cur, quoted, in_word, i = [], False, False, 0
    while i < len(text):
        c = text[i]
        if c == "'":
            j = text.index("'", i + 1)
            quoted, in_word, i = True, True, j + 1
            continue
        if c == "\\":
            quoted, in_word, i = True, True, i + 2
            continue
        if c in " \n\t":
            if in_word:
                out.append(("".join(cur), quoted))
            cur, quoted, in_word = [], False, False
        else:
            cur.append(c)
            in_word = True
        i += 1
    if in_word:
        out.append(("".join(cur), quoted))
    return out


BARE = re.compile(r"\$[A-Z_][A-Z0-9_]*")
SHELL_META = set(";&|<>()*?[]{}`\"!")


def render(recipe: Recipe, sel: Selection) -> dict[str, Any]:
    ctx, plan = resolve(catalog(), recipe, sel)
    return rendering_object(ctx, plan)


# --- properties -----------------------------------------------------------------------------------

@SETTINGS
@given(selections())
def test_text_and_argv_agree(case: tuple[Recipe, Selection]) -> None:
    obj = render(*case)
    for text, argv, _env in processes(obj):
        assert words(text) == argv
    for text, argv in dockers(obj):
        assert words(text) == argv


@SETTINGS
@given(selections())
def test_resolution_is_deterministic(case: tuple[Recipe, Selection]) -> None:
    recipe, sel = case
    first = render(recipe, sel)
    again = render(recipe, sel)
    assert again == first
    assert list(again) == list(first)


@SETTINGS
@given(selections())
def test_shell_expands_only_bare_placeholders(case: tuple[Recipe, Selection]) -> None:
    obj = render(*case)
    for text, _argv, _env in processes(obj):
        for word, quoted in unquoted_words(text):
            if "$" in word:
                assert not quoted and BARE.fullmatch(word), (word, text)
            assert not (set(word) & SHELL_META), (word, text)
            assert not word.startswith(("#", "~")), (word, text)
    for text in [d for d, _ in dockers(obj)] + routers(obj):
        # env values (`-e K=V`) and router endpoints embed placeholders on purpose; they must
        # still be plain upper-case names.
        for word, _quoted in unquoted_words(text.split("\n", 1)[1] if text.startswith("# ") else text):
            for m in re.finditer(r"\$", word):
                assert BARE.match(word, m.start()), (word, text)


@SETTINGS
@given(selections())
def test_explain_accounts_for_every_token(case: tuple[Recipe, Selection]) -> None:
    recipe, sel = case
    cat = catalog()
    ctx, plan = resolve(cat, recipe, sel)
    obj = rendering_object(ctx, plan)
    sections = dict(explain_plan(cat, plan))
    if isinstance(plan, SinglePlan):
        expect = [("vLLM", obj["argv"], obj["env"])]
    elif isinstance(plan, MultiNodePlan):
        expect = [("Head", obj["head_argv"], obj["env"]),
                  *((f"Node {i}", a, None) for i, a in enumerate(obj["worker_argvs"], start=1))]
    elif isinstance(plan, PdPlan):
        expect = [(r.capitalize(), obj[r]["argv"], obj[r]["env"]) for r in ("prefill", "decode")]
    else:
        assert isinstance(plan, KvStorePlan)
        expect = [("vLLM instance", obj["vllm_argv"], obj["env"]),
                  *((f"vLLM instance node {i}", a, None) for i, a in enumerate(obj["vllm_worker_argvs"] or [],
                                                                                   start=1))]
    assert list(sections) == [title for title, _, _ in expect]
    for title, argv, env in expect:
        rows = sections[title]
        tokens: list[str] = []
        for row in (r for r in rows if r.kind == "arg"):
            tokens.append(row.name)
            if row.value is not None:
                tokens.append(row.value)
            assert row.source["layer"]
        assert tokens == argv[3:], title
        env_rows = [r.name for r in rows if r.kind == "env"]
        assert env_rows == (list(env) if env is not None else []), title
