"""The accelerator resource names are catalog data, validated, and a profile without one is a clear refusal."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vllm_recipes.catalog import load_catalog
from vllm_recipes.catalog.validate import validate_catalog
from vllm_recipes.render.export import ExportError, ExportOptions, export_artifacts
from vllm_recipes.select.state import PageRequest, build_state

BUNDLED_TAXONOMY = Path(load_catalog().root) / "taxonomy.yaml"


def test_every_accelerator_profile_names_its_device_resource():
    profiles = load_catalog().hardware_profiles
    by_brand = {hw: (p["brand"], p.get("device_resource")) for hw, p in profiles.items()}
    assert by_brand["h200"] == ("NVIDIA", "nvidia.com/gpu")
    assert by_brand["mi355x"] == ("AMD", "amd.com/gpu")
    assert by_brand["trillium"] == ("Google", "google.com/tpu")
    assert by_brand["ascend_910c"] == ("Huawei", "huawei.com/Ascend910")
    assert all(p.get("device_resource") for p in profiles.values() if p["generation"] != "cpu")
    assert not any(p.get("device_resource") for p in profiles.values() if p["generation"] == "cpu")


def _with_taxonomy(tmp_path: Path, old: str, new: str) -> Path:
    text = BUNDLED_TAXONOMY.read_text()
    assert old in text
    (tmp_path / "taxonomy.yaml").write_text(text.replace(old, new, 1))
    shutil.copytree(BUNDLED_TAXONOMY.parent / "models", tmp_path / "models")
    return tmp_path


def test_a_malformed_device_resource_is_a_validation_error(tmp_path):
    d = _with_taxonomy(tmp_path, "device_resource: amd.com/gpu", "device_resource: amd gpu")
    findings = validate_catalog(load_catalog(d))
    bad = [f for f in findings if f.key_path.endswith("device_resource")]
    assert bad and bad[0].file == "taxonomy.yaml" and bad[0].severity == "error"
    assert bad[0].key_path.startswith("hardware_profiles.mi300x")


def test_a_profile_without_device_resource_cannot_become_a_manifest(tmp_path):
    # a directory's taxonomy now inherits the field from the bundled one (per-field merge), so drop it
    # from the resolved profile itself
    from dataclasses import replace as _replace

    from vllm_recipes.render import k8s
    from vllm_recipes.render.export import deployment_for

    catalog = load_catalog()
    recipe = catalog.recipe("deepseek-ai/DeepSeek-V4-Flash")
    st = build_state(catalog, recipe, PageRequest(hardware="h100"))
    dep = deployment_for(catalog, recipe, st.selection, st.install)[2]
    dep = _replace(dep, profile={k: v for k, v in dep.profile.items() if k != "device_resource"})
    with pytest.raises(ExportError, match="'h100' declares no device_resource"):
        k8s.render(dep, ExportOptions(install=st.install))
    # the other targets do not need it
    assert export_artifacts(catalog, recipe, st.selection, "slurm", ExportOptions(install=st.install))
