"""The summary's platform count follows the same rule as ``platforms.json``: a count of a file not written
would mislead the reader of the summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from api_helpers import recipe, write_dir

from vllm_recipes.api.build import build_api
from vllm_recipes.catalog import load_catalog

PLATFORMS = {"platforms": [{"id": "acme_cloud", "name": "Acme Cloud"}]}


@pytest.mark.parametrize("with_platforms", ["lower", "upper"])
def test_platform_count_agrees_with_platforms_json(tmp_path: Path, with_platforms: str) -> None:
    lower = write_dir(tmp_path / "lower", {"acme/Base.yaml": recipe("acme/Base")})
    upper = write_dir(tmp_path / "upper", {"acme/Other.yaml": recipe("acme/Other")})
    layer = lower if with_platforms == "lower" else upper
    (layer / "platforms.yaml").write_text(yaml.safe_dump(PLATFORMS), encoding="utf-8")

    api = build_api(load_catalog([lower, upper]), jobs=1)

    written = api.files.get("platforms.json")
    expected = len(json.loads(written)["platforms"]) if written is not None else 0
    assert api.counts.platforms == expected
    assert api.summary.splitlines()[0].endswith(f", {expected} platforms")
