"""``vllm-recipes validate``, ``list`` and ``show``: look at recipes without rendering commands."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from vllm_recipes.catalog import Catalog, Recipe
from vllm_recipes.catalog.diagnostics import plural
from vllm_recipes.jsvalues import as_list, as_map

from .main import cli, find_or_exit, follow_symlinks_option, load_or_exit, recipes_dir_option
from .output import dump_json, is_tty, json_option, output_format, print_table
from .vllm_cmds import check_release, vllm_option

if TYPE_CHECKING:
    from vllm_recipes.catalog.diagnostics import Finding


def _heading(text: str) -> None:
    if is_tty():
        from rich.console import Console

        Console().print(f"\n[bold]{text}[/bold]")
    else:
        click.echo(f"\n{text}")


def _display_path(catalog: Catalog, name: str) -> str:
    """Catalog-relative names become paths a terminal user can open (relative to cwd when shorter)."""
    if name.startswith("<bundled>/") or os.path.isabs(name):
        return name
    p = catalog.root / name
    if not p.exists():
        return name
    try:
        rel = os.path.relpath(p)
    except ValueError:
        return str(p)
    return rel if not rel.startswith("..") else str(p.resolve())


@cli.command("validate")
@recipes_dir_option
@follow_symlinks_option
@json_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif"], case_sensitive=False),
              default=None, help="text (file:line:col lines), json (same as --json), github (Actions workflow "
              "annotations), sarif (SARIF 2.1.0).  [default: text]")
@vllm_option
@click.option("--new-since", "new_since", metavar="BASE", default=None,
              help="Report only the findings BASE did not have (BASE as in `diff`: a directory or "
                   "git:REV[:SUBDIR]); CI then blocks only what a change introduces.")
@click.option("--fail-on", "fail_on", type=click.Choice(["error", "warning", "never"]), default="error",
              show_default=True, help="Exit 1 when a reported finding is at least this severe (never: always 0).")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def validate_cmd(recipes_dir: tuple[str, ...], as_json: bool, fmt: str | None, files: tuple[Path, ...],
                 vllm_release: str | None = None, new_since: str | None = None, fail_on: str = "error") -> None:
    """Check recipes (all of the catalog, or just FILES) and report problems with file:line:col.

    FILES may live outside the recipes directory; they are checked against its
    taxonomy and strategies. Every offered selection's commands are also linted
    against the vLLM release they run (pinned image tag, else the newest table
    plus the recipe's min_vllm_version; --vllm forces one). Exit code 1 when
    there is an error (--fail-on), 2 when there is no recipe to check. Every
    key: docs/reference/recipe-format.md.
    """
    from vllm_recipes.catalog.diagnostics import format_findings_summary, sort_findings
    from vllm_recipes.catalog.validate import (
        catalog_with_file,
        validate_catalog,
        validate_file,
        validated_files,
    )
    from vllm_recipes.lint.vllm_validate import dead_value_and_release_checker, vllm_release_checker

    forced = check_release(vllm_release)
    catalog = load_or_exit(recipes_dir, require_recipes=not files)
    shown: dict[str, str] = {}  # file key -> the path as typed
    if files:
        findings: list[Finding] = []
        for path in files:
            _cat, key, _kind = catalog_with_file(catalog, path, str(path))
            shown[key] = str(path)
            checks = [vllm_release_checker(forced)]
            findings.extend(validate_file(path, catalog, str(path), extra_checks=checks))
        findings = sort_findings(findings)
        n_files = len(shown)
    else:
        # dead values and the release lint share one resolve of every offered selection
        findings = validate_catalog(catalog, extra_checks=[dead_value_and_release_checker(forced)])
        n_files = len(validated_files(catalog))
    if new_since is not None:
        findings = _new_since(new_since, recipes_dir, findings, forced)

    def where(f: Finding) -> str:
        return shown.get(f.file) or _display_path(catalog, f.file)

    fmt = output_format(as_json, fmt)
    summary = format_findings_summary(findings, n_files) + (f" new since {new_since}" if new_since else "")
    if fmt == "json":
        dump_json([{**f.to_dict(), "file": where(f)} for f in findings])
    elif fmt in ("github", "sarif"):
        from vllm_recipes import __version__
        from vllm_recipes.review.annotations import github_annotation, sarif_log

        if fmt == "github":
            for f in findings:
                click.echo(github_annotation(f, where(f)))
            click.echo(summary)
        else:
            dump_json(sarif_log(findings, where, __version__))
    else:
        for f in findings:
            click.echo(f.format(where(f)))
        click.echo(summary)
    blocking = {"error": ("error",), "warning": ("error", "warning"), "never": ()}[fail_on]
    sys.exit(1 if any(f.severity in blocking for f in findings) else 0)


def _new_since(base: str, recipes_dir: tuple[str, ...], findings: list[Finding],
               forced: Any) -> list[Finding]:
    """``findings`` that BASE (a directory or git:REV[:SUBDIR]) did not have; positions ignored (lines move)."""
    from vllm_recipes.catalog.diagnostics import findings_not_in
    from vllm_recipes.catalog.fileset import load_catalog_from_files
    from vllm_recipes.catalog.loader import recipe_source_specs
    from vllm_recipes.catalog.remote import is_remote
    from vllm_recipes.catalog.validate import validate_catalog
    from vllm_recipes.lint.vllm_validate import dead_value_and_release_checker

    from .diff_cmds import read_side

    specs = recipe_source_specs(recipes_dir)
    top = specs[-1] if specs else "."
    git_cwd = top if not is_remote(top) and os.path.isdir(top) else "."
    base_catalog = load_catalog_from_files(read_side(base, git_cwd), base)
    return findings_not_in(validate_catalog(base_catalog, extra_checks=[dead_value_and_release_checker(forced)]), findings)


@cli.command("list")
@recipes_dir_option
@json_option
def list_cmd(recipes_dir: tuple[str, ...], as_json: bool) -> None:
    """List the recipes of the catalog: id, title, provider and variants."""
    catalog = load_or_exit(recipes_dir)
    rows = [{"hf_id": r.hf_id, "title": r.title, "provider": r.provider,
             "variants": [str(k) for k in r.variants], "file": r.rel_path} for r in catalog.recipes]
    if as_json:
        dump_json(rows)
    else:
        print_table(None, ["HF ID", "TITLE", "PROVIDER", "VARIANTS"],
                    [[r["hf_id"], r["title"], r["provider"], r["variants"]] for r in rows])
    if catalog.load_errors:
        click.echo(f"note: {plural(len(catalog.load_errors), 'file')} could not be loaded; "
                   "run `vllm-recipes validate` for details", err=True)


def recipe_overview(catalog: Catalog, recipe: Recipe) -> dict[str, Any]:
    """Everything ``show`` prints, as plain data (also the ``--json`` output)."""
    from vllm_recipes.select.defaults import pick_default_hardware, recommend_strategy
    from vllm_recipes.select.gates import offered_strategies

    data, meta, model = recipe.data, recipe.meta, recipe.model
    profiles = catalog.hardware_profiles
    default_hw = pick_default_hardware(profiles, as_map(recipe.variants.get("default")), data) if profiles else None
    offered = offered_strategies(data) if not recipe.is_omni else []
    recommended = recommend_strategy(data, 1) if offered else None
    opt_in = [f for f in as_list(data.get("opt_in_features")) if isinstance(f, str)]
    out: dict[str, Any] = {
        "hf_id": recipe.hf_id, "title": recipe.title, "provider": recipe.provider,
        "description": meta.get("description"), "model_id": model.get("model_id"), "file": recipe.rel_path,
        "source": recipe.source,
        "omni": recipe.is_omni, "default_hardware": default_hw,
        "variants": [{"key": vk, "label": as_map(v).get("label"), "precision": as_map(v).get("precision"),
                      "vram_minimum_gb": as_map(v).get("vram_minimum_gb"),
                      "model_id": as_map(v).get("model_id") or model.get("model_id")} for vk, v in recipe.variants.items()],
        "hardware": _hardware_rows(catalog, recipe, default_hw),
        "strategies": _strategy_rows(catalog, recipe, offered, recommended), "recommended_strategy": recommended,
        "features": _feature_rows(recipe, default_hw, opt_in), "opt_in_features": opt_in,
        "hardware_opt_in_features": {hw: [f for f in as_list(lst) if isinstance(f, str)]
                                     for hw, lst in as_map(data.get("hardware_opt_in_features")).items()},
    }
    if recipe.is_omni:
        tasks = as_list(as_map(data.get("omni")).get("tasks"))
        out["omni_tasks"] = [t if isinstance(t, str) else as_map(t).get("key") or as_map(t).get("id") for t in tasks]
    return out


def _hardware_rows(catalog: Catalog, recipe: Recipe, default_hw: str | None) -> list[dict[str, Any]]:
    """Each listed profile with the variants that run on it, then declared ids the catalog lacks."""
    from vllm_recipes.select.gates import is_listed, variant_runs_on

    declared = {hw: s if isinstance(s, str) else None for hw, s in as_map(recipe.meta.get("hardware")).items()}
    rows = []
    for hw, prof in catalog.hardware_profiles.items():
        p = as_map(prof)
        if is_listed(recipe.data, hw, p):
            runs = [vk for vk, v in recipe.variants.items() if isinstance(v, dict) and variant_runs_on(p, v, hw)]
            rows.append({"id": hw, "display_name": p.get("display_name"), "status": declared.get(hw),
                         "default": hw == default_hw, "known": True, "variants": runs,
                         "sources": {str(k): catalog.origin_of(catalog.taxonomy_file, ("hardware_profiles", hw, k))
                                     for k in p}})
    return rows + [{"id": hw, "display_name": None, "status": status, "default": False, "known": False, "variants": []}
                   for hw, status in declared.items() if hw not in catalog.hardware_profiles]


def _strategy_rows(catalog: Catalog, recipe: Recipe, offered: list[Any], recommended: str | None
                   ) -> list[dict[str, Any]]:
    listed = as_list(recipe.data.get("compatible_strategies"))
    sh = as_map(recipe.data.get("strategy_hardware"))
    rows = []
    for s in offered:
        gates = as_map(sh.get(s))
        spec = as_map(catalog.strategies.get(s)) if isinstance(s, str) else {}
        rows.append({
            "id": s, "display_name": spec.get("display_name"), "known": s in catalog.serving_strategies,
            "recommended": s == recommended, "opt_in": s not in listed,
            "supported_on": [k for k, v in gates.items() if v == "supported"],
            "unsupported_on": [k for k, v in gates.items() if v == "unsupported"],
        })
    return rows


def _feature_rows(recipe: Recipe, default_hw: str | None, opt_in: list[str]) -> list[dict[str, Any]]:
    from vllm_recipes.select.defaults import default_features
    from vllm_recipes.select.gates import default_mode_for, feature_conflicts

    data = recipe.data
    default_on = set(default_features(data, default_hw, "default")) if not recipe.is_omni else set()
    rows = []
    for fk, feat in as_map(data.get("features")).items():
        f = as_map(feat)
        modes = list(as_map(f.get("modes")))
        rows.append({
            "key": fk, "label": f.get("label"), "description": f.get("description"),
            "default_on": fk in default_on, "opt_in": fk in opt_in,
            "modes": modes, "default_mode": default_mode_for(f) if modes else None,
            "strategies": list(as_list(f.get("strategies"))),
            "conflicts_with": list(feature_conflicts(data, fk)) if isinstance(fk, str) else [],
        })
    return rows


def print_overview(ov: dict[str, Any], via_variant: str | None) -> None:
    click.echo(f"{ov['hf_id']} — {ov['title']} ({ov['provider']})")
    if via_variant:
        click.echo(f"(served by variant '{via_variant}' of this recipe)")
    if ov.get("description"):
        click.echo(ov["description"])
    source = f"    source: {ov['source']}" if ov.get("source") else ""
    click.echo(f"model: {ov['model_id']}    file: {ov['file']}{source}")

    _heading("Variants")
    print_table(None, ["KEY", "LABEL", "PRECISION", "SIZE", "MODEL"],
                [[v["key"], v["label"], v["precision"],
                  f"{v['vram_minimum_gb']} GB" if v["vram_minimum_gb"] is not None else "", v["model_id"]]
                 for v in ov["variants"]])

    _print_hardware(ov)
    if ov["omni"]:
        _heading("Omni tasks")
        click.echo(", ".join(str(t) for t in ov.get("omni_tasks", [])) or "(none)")
    else:
        _print_strategies(ov)
    _print_features(ov)


def _print_hardware(ov: dict[str, Any]) -> None:
    _heading("Hardware")
    rows = []
    for h in ov["hardware"]:
        name = h["display_name"] or ("(unknown id)" if not h["known"] else "")
        runs = h["variants"] if h["known"] else []
        mark = {"verified": "✓ verified", "unsupported": "✗ unsupported"}.get(h["status"], h["status"] or "")
        if h["known"] and not runs and h["status"] != "unsupported":
            mark = (mark + " " if mark else "") + "(no variant runs)"
        facts_from = ", ".join(dict.fromkeys(h.get("sources", {}).values()))
        rows.append([h["id"] + (" *" if h["default"] else ""), name, mark, runs, facts_from])
    print_table(None, ["ID", "NAME", "STATUS", "VARIANTS", "FACTS FROM"], rows)
    if ov["default_hardware"]:
        click.echo("* default hardware")


def _print_strategies(ov: dict[str, Any]) -> None:
    _heading("Strategies")
    srows = []
    for s in ov["strategies"]:
        notes = [("recommended", s["recommended"]), ("opt-in on " + ", ".join(s["supported_on"]), s["opt_in"]),
                 ("unsupported on " + ", ".join(s["unsupported_on"]), s["unsupported_on"]),
                 ("unknown strategy", not s["known"])]
        srows.append([s["id"], s["display_name"], "; ".join(note for note, shown in notes if shown)])
    print_table(None, ["ID", "NAME", "NOTES"], srows)


def _print_features(ov: dict[str, Any]) -> None:
    _heading("Features")
    frows = []
    for f in ov["features"]:
        modes = [f"{mk}*" if mk == f["default_mode"] else mk for mk in f["modes"]]
        extra = [f"{what}: " + ", ".join(map(str, f[key]))
                 for key, what in (("strategies", "strategies"), ("conflicts_with", "conflicts with")) if f[key]]
        frows.append([f["key"], "on" if f["default_on"] else "off", modes, "; ".join(extra)])
    print_table(None, ["FEATURE", "DEFAULT", "MODES (* default)", "NOTES"], frows)
    click.echo("opt-in features: " + (", ".join(ov["opt_in_features"]) or "(none)"))
    for hw, lst in ov["hardware_opt_in_features"].items():
        click.echo(f"opt-in on {hw}: " + (", ".join(lst) or "(none)"))


@cli.command("show")
@recipes_dir_option
@json_option
@click.argument("hf_id")
def show_cmd(recipes_dir: tuple[str, ...], as_json: bool, hf_id: str) -> None:
    """Show one recipe: variants, hardware, offered strategies and features."""
    catalog = load_or_exit(recipes_dir)
    recipe, via_variant = find_or_exit(catalog, hf_id)
    ov = recipe_overview(catalog, recipe)
    if as_json:
        if via_variant:
            ov["via_variant"] = via_variant
        dump_json(ov)
    else:
        print_overview(ov, via_variant)
