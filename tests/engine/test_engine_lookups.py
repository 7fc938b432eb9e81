"""Hardware-keyed lookups (synthesis.md §2): three families that must not be unified."""

from __future__ import annotations

import pytest
from engine_helpers import recipe, render, tail

from vllm_recipes.select.lookups import brand_lower, gen, gen_or_nvidia_with_key, keyed

B200 = {"brand": "NVIDIA", "generation": "blackwell", "gpu_count": 8, "vram_gb": 1440}
H200 = {"brand": "NVIDIA", "generation": "hopper", "gpu_count": 8, "vram_gb": 1128}
MI300X = {"brand": "AMD", "generation": "amd", "gpu_count": 8, "vram_gb": 1536}
XEON = {"brand": "Intel", "generation": "cpu", "gpu_count": 4, "vram_gb": 1024}


class TestGeneration:
    """§2.1."""

    def test_generation_then_legacy_alias(self) -> None:
        assert gen(B200) == "blackwell"
        assert gen({"gpu_generation": "hopper"}) == "hopper"
        assert gen({"generation": "", "gpu_generation": "ada"}) == "ada"
        assert gen({"generation": "hopper", "gpu_generation": "ada"}) == "hopper"

    def test_list_takes_first_element(self) -> None:
        assert gen({"generation": ["blackwell", "hopper"]}) == "blackwell"
        assert gen({"gpu_generation": ("ada",)}) == "ada"

    def test_unknown_profile(self) -> None:
        assert gen({}) is None
        assert brand_lower({}) is None
        assert brand_lower(MI300X) == "amd"
        assert brand_lower(XEON) == "intel"


KEYED_MAP = {"b200": "exact", "blackwell": "gen", "nvidia": "brand", "default": "dflt"}


class TestKeyed:
    """§2.2 exact > generation > brand > default, first *present*."""

    @pytest.mark.parametrize(("profile", "hw", "want"), [
        (B200, "b200", "exact"),
        (B200, "gb200", "gen"),
        (H200, "h200", "brand"),
        (MI300X, "mi300x", "dflt"),
        ({}, "mystery", "dflt"),
        (B200, None, "gen"),
        (B200, "", "gen"),
    ])
    def test_order(self, profile, hw, want) -> None:
        assert keyed(KEYED_MAP, profile, hw) == want

    @pytest.mark.parametrize("falsy", [0, "", False, {}, []])
    def test_present_but_falsy_values_win(self, falsy) -> None:
        assert keyed({"b200": falsy, "blackwell": "gen"}, B200, "b200") == falsy
        assert keyed({"blackwell": falsy, "default": "d"}, B200, "b200") == falsy
        assert keyed({"nvidia": falsy, "default": "d"}, B200, "b200") == falsy
        assert keyed({"default": falsy}, B200, "b200") == falsy

    def test_null_is_absent(self) -> None:
        assert keyed({"b200": None, "blackwell": None, "nvidia": None, "default": 3}, B200, "b200") == 3
        assert keyed({"b200": None}, B200, "b200") is None

    def test_amd_generation_and_brand_coincide(self) -> None:
        assert keyed({"amd": 2, "default": 4}, MI300X, "mi300x") == 2

    def test_other_brands_by_lower_case_name(self) -> None:
        assert keyed({"intel": "i", "default": "d"}, XEON, "xeon6") == "i"
        assert keyed({"cpu": "c", "intel": "i"}, XEON, "xeon6") == "c"
        assert keyed({"Intel": "I", "default": "d"}, XEON, "xeon6") == "d"

    @pytest.mark.parametrize("not_a_map", [None, 4, "x", ["b200"]])
    def test_not_a_map(self, not_a_map) -> None:
        assert keyed(not_a_map, B200, "b200") is None


def gen_or_nvidia(m, profile):
    hit = gen_or_nvidia_with_key(m, profile)
    return hit[1] if hit else None


class TestGenOrNvidia:
    """§2.3: ``map[gen]`` if truthy, else ``map.nvidia`` on NVIDIA; nothing else."""

    def test_generation_block(self) -> None:
        assert gen_or_nvidia({"blackwell": {"a": 1}, "nvidia": {"b": 2}}, B200) == {"a": 1}

    def test_null_generation_block_falls_back_to_nvidia(self) -> None:
        assert gen_or_nvidia({"blackwell": None, "nvidia": {"b": 2}}, B200) == {"b": 2}

    @pytest.mark.parametrize("falsy", [0, "", False])
    def test_falsy_generation_block_falls_back(self, falsy) -> None:
        assert gen_or_nvidia({"blackwell": falsy, "nvidia": {"b": 2}}, B200) == {"b": 2}

    def test_empty_generation_block_is_truthy_and_wins(self) -> None:
        assert gen_or_nvidia({"blackwell": {}, "nvidia": {"b": 2}}, B200) == {}

    def test_no_nvidia_fallback_off_nvidia(self) -> None:
        assert gen_or_nvidia({"nvidia": {"b": 2}}, MI300X) is None
        assert gen_or_nvidia({"nvidia": {"b": 2}}, {}) is None

    def test_ignores_exact_brand_and_default(self) -> None:
        m = {"b200": 1, "mi300x": 1, "intel": 1, "default": 1}
        assert gen_or_nvidia(m, B200) is None
        assert gen_or_nvidia(m, XEON) is None
        assert gen_or_nvidia({"amd": {"x": 1}}, MI300X) == {"x": 1}  # by generation, not brand

    def test_not_a_map(self) -> None:
        assert gen_or_nvidia(None, B200) is None
        assert gen_or_nvidia(["blackwell"], B200) is None


class TestFamiliesInRecipes:
    """The same-looking maps are read with different rules depending on the field (§2.6)."""

    def test_recipe_gen_block_null_falls_back_to_nvidia(self, make_catalog) -> None:
        cat = make_catalog(recipe(hardware_overrides={
            "blackwell": None, "nvidia": {"extra_args": ["--nv"]}, "default": {"extra_args": ["--dflt"]},
        }))
        assert tail(render(cat, hw_id="b200")["argv"]) == ["--tensor-parallel-size", "8", "--nv"]
        assert tail(render(cat, hw_id="mi300x")["argv"]) == ["--tensor-parallel-size", "8"]

    def test_variant_block_read_exact_and_by_generation(self, make_catalog) -> None:
        cat = make_catalog(recipe(variants={"default": {"hardware_overrides": {
            "b200": {"extra_args": ["--exact"]}, "blackwell": {"extra_args": ["--gen"]},
        }}}))
        # exact block at step 2b, generation block at step 5
        assert tail(render(cat, hw_id="b200")["argv"]) == ["--exact", "--tensor-parallel-size", "8", "--gen"]
        assert tail(render(cat, hw_id="gb200")["argv"]) == ["--tensor-parallel-size", "4", "--gen"]

    def test_tp_map_is_full_keyed(self, make_catalog) -> None:
        cat = make_catalog(recipe(variants={"default": {"tp": {"h200": 2, "nvidia": 4, "default": 1}}}))
        assert tail(render(cat, hw_id="h200")["argv"]) == ["--tensor-parallel-size", "2"]
        assert tail(render(cat, hw_id="h100")["argv"]) == ["--tensor-parallel-size", "4"]
        assert tail(render(cat, hw_id="mi300x")["argv"]) == ["--tensor-parallel-size", "1"]
