"""The page's own words for reasons other layers give in CLI or recipe-author terms: a reader of the page
has pills and tabs, not flags (the browser tests check pages with :data:`CLI_TEXT`)."""

from __future__ import annotations

import re

from vllm_recipes.render.export import TARGETS

#: text that belongs to a terminal or a recipe file, never to the page's prose: a ``--flag``,
#: a back-quoted command, a YAML file name, the CLI's own name
CLI_TEXT = re.compile(r"(?<![\w-])--[a-z][\w-]*|`[^`]*`|\b[\w.-]+\.ya?ml\b|\bvllm-recipes\b|\bPATH\b")


def has_cli_text(text: str) -> bool:
    return CLI_TEXT.search(text) is not None


def upper_first(text: str) -> str:
    """``text`` as the start of a sentence: ``str.capitalize`` would turn "needs GPUs on H200" into "Needs gpus on h200"."""
    return text[:1].upper() + text[1:]


def page_sentence(message: str) -> str:
    """``message`` without its clauses (cut at ``.``, ``;``, ``:`` and parentheses) that name a flag,
    a file or a command: the reason itself, in the producer's words."""
    text = re.sub(r"\s*\([^()]*\)", lambda m: "" if has_cli_text(m.group(0)) else m.group(0), message)
    parts = re.split(r"(;\s+|:\s+(?=[a-z])|(?<=\.)\s+)", text.strip())
    kept: list[str] = []
    for clause, sep in zip(parts[::2], [*parts[1::2], ""], strict=True):
        if clause and not has_cli_text(clause):
            kept += [clause, sep]
    out = "".join(kept[:-1]).strip().rstrip(".;:")
    if not out:
        return ""
    if not out[1:2].isupper():  # "vLLM picks …" keeps its case
        out = upper_first(out)
    return out + "."


#: flags a fit warning may name, in the page's words (a warning is never dropped for naming one)
FLAG_WORDS = ((re.compile(r"--max-model-len ([\d,]+)"), r"the longest request (\1 tokens)"),
              (re.compile(r"--max-model-len"), "the longest request"),
              (re.compile(r"--tensor-parallel-size ?"), "tensor-parallel size "),
              (re.compile(r"--kv-cache-dtype ?"), "KV cache type "),
              (re.compile(r"--gpu-memory-utilization ?"), "GPU memory share "))


def page_warning(message: str) -> str:
    """A fit warning with the flags it names in page words, then without command-line clauses."""
    for pattern, words in FLAG_WORDS:
        message = pattern.sub(words, message)
    return page_sentence(message) or message


def page_lever(kind: str, detail: str) -> str:
    """A Fit lever (``fit.memory.Lever``) as something the reader can do on this page."""
    what = {
        "fp8_kv": "An FP8 KV cache",
        "tensor_parallel": "Twice the GPUs per replica (more nodes in the Nodes row, or bigger hardware)",
        "max_model_len": "A shorter context (the context pills below)",
        "cpu_offload": "Offloading weights to CPU memory",
    }.get(kind, kind.replace("_", " ").capitalize())
    said = page_sentence(detail).rstrip(".") or detail
    return f"{what}: {said[:1].lower() + said[1:] if said[1:2].islower() else said}"


def fit_unknown(reason: str) -> str:
    """The Fit panel's line when the figures cannot be computed (the architecture is unknown)."""
    if "architecture" in reason:
        return ("Memory fit needs this model's architecture (layers, attention heads, hidden size), "
                "which the recipe does not give yet.")
    return page_sentence(reason) or "Memory fit cannot be computed for this selection."


def deploy_refusal(target: str, message: str) -> str:
    """Why a Deploy tab shows no file, pointing at the other tabs rather than at ``--to``."""
    tab = TARGETS[target][1] if target in TARGETS else target
    others = [label for key, (_render, label) in TARGETS.items() if key != target]
    head = page_sentence(message) or f"{tab} cannot express this selection."
    return f"{head} Try the {', '.join(others[:-1])} or {others[-1]} tab, or another Strategy or Nodes pill."
