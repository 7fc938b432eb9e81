"""``serve`` builds the static JSON API in a child process that receives the loaded catalog pickled
(:func:`vllm_recipes.parallel.in_background`): every catalog it can load must survive the trip."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from vllm_recipes.catalog.layers import LayeredDocument
from vllm_recipes.catalog.loader import load_catalog
from vllm_recipes.catalog.usable import usable_catalog


def _same(a: Any, b: Any) -> None:
    assert [r.hf_id for r in a.recipes] == [r.hf_id for r in b.recipes]
    for x, y in zip(a.recipes, b.recipes, strict=True):
        assert x.doc == y.doc and x.doc.file == y.doc.file
        assert x.doc.position(("model",)) == y.doc.position(("model",))


def test_the_bundled_catalog_round_trips() -> None:
    catalog, _ = usable_catalog(load_catalog(None))
    _same(catalog, pickle.loads(pickle.dumps(catalog)))


def test_a_layered_catalog_round_trips(tmp_path: Path, recipe_writer: Any) -> None:
    """A directory over the bundled catalog: a file both have is layered (:class:`LayeredDocument`)."""
    (tmp_path / "taxonomy.yaml").write_text('hardware_profiles:\n  h100:\n    display_name: "H100 (ours)"\n',
                                            encoding="utf-8")
    recipe_writer(tmp_path, "acme/Small", {
        "meta": {"title": "Small"}, "model": {"model_id": "acme/Small"},
        "variants": {"default": {"precision": "bf16", "vram_minimum_gb": 20}},
        "compatible_strategies": ["single_node_tp"]})
    catalog, _ = usable_catalog(load_catalog(str(tmp_path)))
    layered = [src.doc for src in catalog.sources if isinstance(src.doc, LayeredDocument)]
    assert layered  # (the shape this test is about)
    again = pickle.loads(pickle.dumps(catalog))
    _same(catalog, again)
    for doc in layered:
        copy = pickle.loads(pickle.dumps(doc))
        assert isinstance(copy, LayeredDocument) and copy == doc
        assert [d.file for d in copy.layers] == [d.file for d in doc.layers]
