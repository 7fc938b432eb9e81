"""Recipe-given links stay on this site or go to an http(s) host by name (issue #28 item 10)."""

from __future__ import annotations

import pytest

from vllm_recipes.web.security import safe_link


@pytest.mark.parametrize("href", ["/\\evil.example", "//evil.example", "/\t/evil.example", "/\n/evil.example",
                                  "\\\\evil.example", "javascript:alert(1)", "JaVaScRiPt:alert(1)",
                                  "data:text/html,x", "http:/evil.example", "https:///evil.example",
                                  "http://evil.example\\@good.example", " /x", "/x\u2028", "", None, 3])
def test_off_site_or_odd_links_are_refused(href: object) -> None:
    assert not safe_link(href)


@pytest.mark.parametrize("href", ["https://docs.vllm.ai/en/latest/", "http://example.org/a?b=c#d", "/browse",
                                  "/deepseek-ai/DeepSeek-V4.1-Flash?hardware=h200", "#troubleshooting"])
def test_site_paths_anchors_and_web_links_are_kept(href: str) -> None:
    assert safe_link(href)


def test_hardware_note_drops_a_backslash_link(tmp_path) -> None:
    from vllm_recipes.catalog import load_catalog
    from vllm_recipes.web.builder import hardware_note

    d = tmp_path / "models" / "acme"
    d.mkdir(parents=True)
    (d / "X.yaml").write_text("meta: {title: X, hardware: {h200: verified}}\nmodel: {model_id: acme/X}\n"
                              "variants: {default: {precision: bf16, vram_minimum_gb: 10}}\n"
                              "compatible_strategies: [single_node_tp]\n"
                              "hardware_notes: {h200: {body: b, link: {href: '/\\\\evil.example', label: x}}}\n")
    recipe = load_catalog(tmp_path).find("acme/X")[0]
    note = hardware_note(recipe, "h200")
    assert note is not None and note["href"] is None and note["body"] == "b"
