"""Presenting an :class:`Impact`: one line per grouped change, for a terminal or a pull-request comment.

Both views are built from the same :func:`change_text` lines; the JSON view is ``Impact.to_dict()``.
Markdown is capped (GitHub comments stop at 65,536 characters) and always starts with the summary line.
"""

from __future__ import annotations

from vllm_recipes.catalog.diagnostics import plural

from .compare import Change, Group, Impact, RecipeImpact
from .selections import SelectionKey

#: stay clear of GitHub's 65,536-character comment limit
MARKDOWN_CAP = 60_000
#: long fingerprints (router configs, Mooncake JSON) are cut in the line view
MAX_VALUE = 160
#: appeared / disappeared selections listed per recipe before "and N more"
MAX_LISTED = 12


def _cut(text: str) -> str:
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _code(text: str) -> str:
    text = _cut(text).replace("\n", " ")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def change_text(c: Change) -> str:
    """``--max-num-seqs 256`` -> ``128`` and friends (no scope, no cause)."""
    if c.kind == "synthesis":
        if c.after is None:
            return f"command synthesis fixed (was: {_cut(c.before or '')})"
        return f"command synthesis fails: {_cut(c.after)}"
    label = {"image": "image ", "output": f"{c.name}: ", "default": f"{c.name}: "}.get(c.kind, "")
    if c.before is None:
        return f"{label}added {_code(c.after or '')}"
    if c.after is None:
        return f"{label}removed {_code(c.before)}"
    for sep in (" ", "="):
        head = c.name + sep
        if c.kind in ("flag", "env") and c.before.startswith(head) and c.after.startswith(head):
            return f"{_code(c.before)} -> {_code(c.after[len(head):])}"
    return f"{label}{_code(c.before)} -> {_code(c.after)}"


def group_line(g: Group) -> str:
    where = f" [{', '.join(g.processes)}]" if g.processes and g.processes != ("vLLM",) else ""
    cause = f" ({g.change.cause})" if g.change.cause else ""
    scope = f" {g.scope}" if g.scope else ""
    return f"{change_text(g.change)}{scope}{where}{cause}"


def _listed(keys: list[SelectionKey]) -> str:
    shown = "; ".join(k.label for k in keys[:MAX_LISTED])
    return shown + (f"; and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else "")


def recipe_lines(r: RecipeImpact) -> list[str]:
    """The body of one recipe's section, one line per item."""
    status = {"added": f"new recipe: {r.selections_head} selections",
              "removed": f"recipe removed: it had {r.selections_base} selections",
              "broken": f"recipe no longer loads: its {r.selections_base} selections are gone"}.get(r.status)
    lines = [status] if status else []
    lines.extend(f"default {group_line(g)}" for g in r.defaults)
    lines.extend(group_line(g) for g in r.groups)
    if r.appeared:
        lines.append(f"{len(r.appeared)} selections appeared: {_listed(r.appeared)}")
    if r.disappeared:
        lines.append(f"{len(r.disappeared)} selections disappeared: {_listed(r.disappeared)}")
    lines.extend(f"new finding: {f.format()}" for f in r.findings)
    return lines


def recipe_summary(r: RecipeImpact) -> str:
    counts = ((len(r.groups), "change"), (len(r.defaults), "moved default"), (len(r.appeared), "new selection"),
              (len(r.disappeared), "removed selection"), (len(r.findings), "new finding"))
    return ", ".join(plural(n, word) for n, word in counts if n) or r.status


def summary_line(impact: Impact) -> str:
    c = impact.counts()
    if not impact.has_changes:
        return (f"No rendered change: {c['recipes_compared']} recipes and {c['selections_compared']} "
                "selections compared.")
    shared = f"; shared inputs changed: {', '.join(impact.shared_changed)}" if impact.shared_changed else ""
    return (f"{c['recipes_changed']} of {plural(c['recipes_compared'], 'recipe')} changed: "
            f"{plural(c['changes'], 'grouped change')}, {plural(c['defaults_moved'], 'moved default')}, "
            f"{plural(c['selections_appeared'], 'selection')} appeared, {c['selections_disappeared']} disappeared, "
            f"{plural(c['new_findings'], 'new finding')} ({plural(c['selections_compared'], 'selection')} "
            f"compared){shared}.")


def _md_escape(text: str) -> str:
    """Keep GitHub from reading a ``<tag>`` in a value as HTML."""
    return text.replace("<", "&lt;")


def markdown_report(impact: Impact, cap: int = MARKDOWN_CAP) -> str:
    """A pull-request comment: summary first, one collapsible section per recipe, capped in length."""
    head = [f"### Recipe impact: `{impact.base}` -> `{impact.head}`", "", f"**{summary_line(impact)}**", ""]
    if impact.shared_findings:
        head.append("<details><summary>New findings in shared files</summary>\n")
        head.extend(f"- {_md_escape(f.format())}" for f in impact.shared_findings)
        head.append("\n</details>\n")
    out = "\n".join(head)
    omitted = 0
    for n, r in enumerate(impact.recipes):
        body = "\n".join(f"- {_md_escape(line)}" for line in recipe_lines(r))
        section = (f"<details><summary><b>{r.hf_id}</b> (<code>{r.file}</code>): {recipe_summary(r)}</summary>\n\n"
                   f"{body}\n\n</details>\n")
        if len(out) + len(section) > cap - 200:
            omitted = len(impact.recipes) - n
            break
        out += section
    if omitted:
        out += (f"\n_{omitted} more recipe{'s' if omitted != 1 else ''} not shown (comment length cap); "
                "run `vllm-recipes diff --json` for everything._\n")
    return out


def terminal_report(impact: Impact) -> None:
    """The rich view (plain text when not a terminal)."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(soft_wrap=True, highlight=False)
    console.print(f"[bold]{escape(impact.base)} -> {escape(impact.head)}[/bold]: {escape(summary_line(impact))}")
    for f in impact.shared_findings:
        console.print(f"  [red]new finding[/red] {escape(f.format())}")
    for r in impact.recipes:
        console.print(f"\n[bold cyan]{escape(r.hf_id)}[/bold cyan] ({escape(r.file)}): {escape(recipe_summary(r))}")
        for line in recipe_lines(r):
            console.print(f"  • {escape(line)}")
