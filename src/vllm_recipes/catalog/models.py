"""Typed, frozen views of recipe and catalog data, for validation and inspection.

The engine reads the raw frozen data (JavaScript truthiness, absent vs. present); these strict
pydantic models only check it. Rules (strict types, null = absent, unknown keys kept, unions picked
by the input's shape): docs/decisions-catalog.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag, model_validator

from .identifiers import BRAND_KEYS, CUDA_KEYS

#: loaded YAML scalars and lists have exactly these types (``bool`` is its own entry, not an ``int``)
_SHAPES = {type(None): "null", bool: "bool", int: "int", float: "float", str: "str", tuple: "list", list: "list"}


def shape_of(value: Any) -> str:
    """The YAML-level kind of a value; the tag used by every shape union (runs for every union value)."""
    shape = _SHAPES.get(type(value))
    if shape is not None:
        return shape
    # mappings are FrozenDicts; a model is re-validated as the mapping it was built from
    return "map" if isinstance(value, dict | BaseModel) else "other"


def _by_shape(expected: str, picker: Callable[[Any], str | None] = shape_of) -> Discriminator:
    """Pick a union member by the input's shape (its ``Tag``); one clean error when none fits."""
    return Discriminator(picker, custom_error_type="wrong_type", custom_error_message=f"expected {expected}")


#: Union members tagged with the shape that selects them (:func:`shape_of`).
_Int: TypeAlias = Annotated[int, Tag("int")]
_Float: TypeAlias = Annotated[float, Tag("float")]
_Str: TypeAlias = Annotated[str, Tag("str")]
_Bool: TypeAlias = Annotated[bool, Tag("bool")]


class _Model(BaseModel):
    """Base: strict, frozen, unknown keys kept (and reported by the validator)."""

    model_config = ConfigDict(strict=True, frozen=True, extra="allow", protected_namespaces=(), defer_build=True)
    #: ``True`` for models whose extra keys are legitimately free-form (no unknown-key warnings).
    open_keys: ClassVar[bool] = False


class _Open(_Model):
    """A model whose extra keys are free-form: the validator does not report them."""

    open_keys: ClassVar[bool] = True


# --- scalar and list shapes --------------------------------------------------------------

Num: TypeAlias = Annotated[_Int | _Float, _by_shape("a number")]
PosInt: TypeAlias = Annotated[int, Field(gt=0)]
NonNegInt: TypeAlias = Annotated[int, Field(ge=0)]
_PosInt: TypeAlias = Annotated[int, Field(gt=0), Tag("int")]
_PosFloat: TypeAlias = Annotated[float, Field(gt=0), Tag("float")]
PosNum: TypeAlias = Annotated[_PosInt | _PosFloat, _by_shape("a positive number")]
Fraction: TypeAlias = Annotated[Annotated[int, Field(ge=0, le=1), Tag("int")]
                                | Annotated[float, Field(ge=0, le=1), Tag("float")],
                                _by_shape("a number from 0 to 1")]
#: one checkpoint size for every variant, or ``{variant key: GiB}``
CheckpointGib: TypeAlias = Annotated[_PosInt | _PosFloat | Annotated[dict[str, PosNum], Tag("map")],
                                     _by_shape("a number of GiB or a map of variant -> GiB")]
#: A version such as ``"0.20.0"``; a bare YAML number is tolerated (JS stringifies it).
Version: TypeAlias = Annotated[_Str | _Int | _Float, _by_shape("a version string")]
#: Free-text size such as ``"284B"``; numbers tolerated.
TextOrNum: TypeAlias = Annotated[_Str | _Int | _Float, _by_shape("a string or a number")]
Args = tuple[str, ...]
StrList = tuple[str, ...]
#: Env values stay as written: strings, or numbers (``PYTHONHASHSEED: 0``).
Env = dict[str, TextOrNum | None]
#: A number, or a hardware-keyed map of numbers (exact id > generation > brand > default).
NumOrHwMap: TypeAlias = Annotated[_Int | _Float | Annotated[dict[str, Num | None], Tag("map")],
                                   _by_shape("a number or a hardware-keyed map of numbers")]
#: Status strings keyed by hardware (``verified`` / ``unsupported`` / ...).
HwStatusMap = dict[str, str | None]
#: Where the image comes from, shown on the page: a URL string, or a mapping (public recipes use
#: ``{mount_path: ..., ...}``); nothing but the page reads it.
DockerSource: TypeAlias = Annotated[_Str | Annotated[dict[str, Any], Tag("map")], _by_shape("a string or a mapping")]

#: Key paths only the website and the API show (``*``: any key). The engine never reads them, so
#: a wrong type there is a warning and never costs a recipe its place (docs/reference/recipe-format.md).
DISPLAY_ONLY: tuple[tuple[str, ...], ...] = (
    ("meta", "title"), ("meta", "slug"), ("meta", "provider"), ("meta", "description"),
    ("meta", "performance_headline"), ("meta", "related_recipes"), ("meta", "date_added"),
    ("meta", "date_updated"), ("meta", "difficulty"),
    ("model", "architecture"), ("model", "docker_source"),
    ("features", "*", "label"), ("features", "*", "description"),
    ("features", "*", "modes", "*", "label"), ("features", "*", "modes", "*", "description"),
    ("variants", "*", "label"), ("variants", "*", "description"),
)


def is_display_only(path: tuple[str | int, ...]) -> bool:
    """Whether ``path`` lies under a key only the page shows (:data:`DISPLAY_ONLY`)."""
    return any(len(path) >= len(pattern) and all(p in ("*", got) for p, got in zip(pattern, path, strict=False))
               for pattern in DISPLAY_ONLY)


# --- install and docker --------------------------------------------------------------------

class InstallTab(_Model):
    """One install tab (pip or docker): command and note override the synthesized ones."""

    command: str | None = None
    note: str | None = None


#: ``false`` hides the tab; a map overrides command/note; ``true``/null mean "default".
InstallTabValue: TypeAlias = Annotated[_Bool | Annotated[InstallTab, Tag("map")],
                                       _by_shape("false or a map with command/note")]


class Install(_Model):
    """``model.install`` (and per-hardware variant ``install``, extensions.md §2.5)."""

    pip: InstallTabValue | None = None
    docker: InstallTabValue | None = None


class CudaDockerImage(_Model):
    """A map of CUDA-specific images; ``cu130`` is preferred over ``cu129``."""

    cu129: str | None = None
    cu130: str | None = None


def _pick_docker(value: Any) -> str | None:
    """Classify a docker_image value the way synthesis.md §9.1 does."""
    if not isinstance(value, dict):
        return "str" if isinstance(value, str) else None
    if any(k in value for k in BRAND_KEYS):
        return "brand"
    return "cuda" if any(k in value for k in CUDA_KEYS) else "badmap"


NvidiaImage: TypeAlias = Annotated[_Str | Annotated[CudaDockerImage, Tag("map")],
                                   _by_shape("an image string or a CUDA map (cu129/cu130)")]


class BrandDockerImage(_Model):
    """Brand-keyed images; ``nvidia`` may itself be a CUDA map."""

    nvidia: NvidiaImage | None = None
    amd: str | None = None
    tpu: str | None = None
    intel: str | None = None


DockerImage: TypeAlias = Annotated[
    _Str | Annotated[BrandDockerImage, Tag("brand")] | Annotated[CudaDockerImage, Tag("cuda")],
    _by_shape("an image string, a brand map (nvidia/amd/tpu/intel) or a CUDA map (cu129/cu130)", _pick_docker),
]


class SmgGrpc(_Model):
    """``model.smg_grpc``: parsers the SMG gateway runs instead of vLLM (extensions.md §2.6)."""

    reasoning_parser: str | None = None
    tool_call_parser: str | None = None


# --- recipe sections -----------------------------------------------------------------------

class Meta(_Model):
    """``meta``: presentation data; only ``hardware``, ``default_hardware`` and ``tasks`` feed synthesis."""

    title: str | None = None
    slug: str | None = None
    provider: str | None = None
    description: str | None = None
    date_added: str | None = None
    date_updated: str | None = None
    tasks: StrList | None = None
    performance_headline: str | None = None
    related_recipes: StrList | None = None
    #: *display*: ``beginner`` / ``intermediate`` / ``advanced`` in the public catalog
    difficulty: str | None = None
    hardware: HwStatusMap | None = None
    default_hardware: str | None = None


class VllmExtensions(_Model):
    """``model.vllm_extensions``: what a plugin or vendor image adds to ``vllm serve`` (release lint)."""

    #: option strings the image/plugin accepts on top of stock vLLM (``--additional-x``)
    flags: StrList | None = None
    #: env names it reads; a trailing ``*`` declares a namespace (``VLLM_ASCEND_*``)
    env: StrList | None = None


class HostTableFacts(_Model):
    """Weights a flag can move to host memory (``marker``: substring of the flag's value that offloads)."""

    gib: PosNum
    flag: str
    marker: str = ""


class ArchitectureFacts(_Model):
    """``model.architecture_facts``: what the memory planner (``fit``) reads (docs/decisions-fit.md §2)."""

    source: str | None = None
    attention: Literal["mha", "gqa", "mqa", "mla", "compressed_sparse"] | None = None
    num_layers: PosInt | None = None
    num_attention_heads: PosInt | None = None
    num_kv_heads: PosInt | None = None
    head_dim: PosInt | None = None
    kv_lora_rank: PosInt | None = None
    qk_rope_head_dim: NonNegInt | None = None
    sliding_window: PosInt | None = None
    sliding_window_layers: NonNegInt | None = None
    linear_layers: NonNegInt | None = None
    linear_state_bytes: NonNegInt | None = None
    kv_elements_per_token: PosNum | None = None
    kv_elements_per_token_max: PosNum | None = None
    hidden_size: PosInt | None = None
    vocab_size: PosInt | None = None
    max_position_embeddings: PosInt | None = None
    dtype_bytes: Literal[1, 2, 4] | None = None
    checkpoint_gib: CheckpointGib | None = None
    expert_fraction: Fraction | None = None
    indexer_logits_bytes: NonNegInt | None = None
    host_tables: tuple[HostTableFacts, ...] | None = None

    @model_validator(mode="after")
    def _complete(self) -> ArchitectureFacts:
        kind = self.attention
        if kind == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise ValueError("mla attention needs kv_lora_rank and qk_rope_head_dim")
        if kind == "compressed_sparse" and self.kv_elements_per_token is None:
            raise ValueError("compressed_sparse attention needs kv_elements_per_token (an estimate)")
        if kind in (None, "mha", "gqa", "mqa"):
            if self.num_layers is None:
                raise ValueError("num_layers is required")
            if self.head_dim is None or (self.num_kv_heads is None and self.num_attention_heads is None):
                raise ValueError(f"{kind or 'dense'} attention needs head_dim and num_kv_heads "
                                 "(or num_attention_heads)")
        if self.sliding_window_layers and self.sliding_window is None:
            raise ValueError("sliding_window_layers needs sliding_window")
        if (self.kv_elements_per_token_max is not None and self.kv_elements_per_token is not None
                and self.kv_elements_per_token_max < self.kv_elements_per_token):
            raise ValueError("kv_elements_per_token_max is below kv_elements_per_token")
        return self


class ModelSection(_Model):
    """``model``: served id, base args/env, images, install and seed-era extras."""

    model_id: str
    min_vllm_version: Version | None = None
    architecture: str | None = None
    parameter_count: TextOrNum | None = None
    active_parameters: TextOrNum | None = None
    context_length: Num | None = None
    base_args: Args | None = None
    base_env: Env | None = None
    docker_image: DockerImage | None = None
    docker_source: DockerSource | None = None
    nightly_required: bool | None = None
    install: Install | None = None
    supports_dcp: bool | None = None
    flashinfer_autotune: bool | None = None
    default_frontend: str | None = None
    smg_grpc: SmgGrpc | None = None
    vllm_extensions: VllmExtensions | None = None
    architecture_facts: ArchitectureFacts | None = None


class Companion(_Model):
    """A helper process shown next to the serve command (feature or KV option)."""

    label: str | None = None
    description: str | None = None
    command: str | None = None


class FeatureHardwareOverride(_Model):
    """Hardware-keyed replacement of a feature's or mode's ``args``."""

    args: Args | None = None


class FeatureMode(_Model):
    """One single-select mode of a feature (synthesis.md §3.9)."""

    label: str | None = None
    description: str | None = None
    args: Args | None = None
    hardware_overrides: dict[str, FeatureHardwareOverride | None] | None = None
    hardware: HwStatusMap | None = None
    variants: StrList | None = None


class Feature(_Model):
    """A toggleable feature: boolean (``args``) or modal (``modes``)."""

    label: str | None = None
    description: str | None = None
    args: Args | None = None
    hardware_overrides: dict[str, FeatureHardwareOverride | None] | None = None
    #: not read by synthesis (a feature-level gate is not implemented upstream)
    hardware: HwStatusMap | None = None
    strategies: StrList | None = None
    companion: Companion | None = None
    default_mode: str | None = None
    modes: dict[str, FeatureMode | None] | None = None
    conflicts_with: StrList | None = None


class PrecisionHardware(_Model):
    """Explicit precision constraint that replaces the one implied by ``precision``."""

    brand: str | None = None
    generation: str | None = None


class StrategyHardwareOverride(_Model):
    """Hardware block inside a strategy override (generation replace or exact-GPU delta)."""

    extra_args: Args | None = None
    extra_env: Env | None = None


class VariantHardwareOverride(StrategyHardwareOverride):
    """``variants.<v>.hardware_overrides.<key>``: exact-GPU or generation block."""

    docker_image: str | None = None
    vram_minimum_gb: Num | None = None
    install: Install | None = None


class Variant(_Model):
    """One checkpoint of the recipe."""

    model_id: str | None = None
    label: str | None = None
    description: str | None = None
    precision: str
    precision_hardware: PrecisionHardware | None = None
    supported_hardware: StrList | None = None
    vram_minimum_gb: Num | None = None
    tp: NumOrHwMap | None = None
    extra_args: Args | None = None
    extra_env: Env | None = None
    hardware_overrides: dict[str, VariantHardwareOverride | None] | None = None
    docker_image: DockerImage | None = None
    default_modes: dict[str, str | None] | None = None
    min_vllm_version: Version | None = None


class RecipeHardwareOverride(StrategyHardwareOverride):
    """Recipe-level generation (or ``nvidia``) override block."""

    install_note: str | None = None


class PdRoleOverride(_Model):
    """``strategy_overrides.pd_cluster.<prefill|decode>``."""

    parallelism: str | None = None
    tp: Num | None = None
    parallel_flag: str | None = None
    extra_args: Args | None = None
    vllm_args: Args | None = None
    env: Env | None = None
    hardware_overrides: dict[str, StrategyHardwareOverride | None] | None = None
    #: the PD pool's nodes: a number, or ``{<hw_id>: n, default: n}``
    nodes: NumOrHwMap | None = None


class RouterOverride(_Model):
    """``strategy_overrides.<s>.router``: pins the PD router's intra-node DP size."""

    intra_node_data_parallel_size: Num | None = None


class StrategyOverride(_Model):
    """``strategy_overrides.<strategy>`` (PD role blocks only matter for ``pd_cluster``)."""

    extra_args: Args | None = None
    vllm_args: Args | None = None
    env: Env | None = None
    extra_env: Env | None = None
    tp: NumOrHwMap | None = None
    hardware_overrides: dict[str, StrategyHardwareOverride | None] | None = None
    router: RouterOverride | None = None
    prefill: PdRoleOverride | None = None
    decode: PdRoleOverride | None = None
    pool_modes: StrList | None = None


class HardwareNoteLink(_Model):
    """Link shown under a hardware note."""

    label: str | None = None
    href: str | None = None


HardwareNoteLinkValue: TypeAlias = Annotated[_Str | Annotated[HardwareNoteLink, Tag("map")],
                                             _by_shape("a URL string or a map with label/href")]


class HardwareNote(_Model):
    """A structured hardware note (the plain-string form is also accepted)."""

    title: str | None = None
    body: str | None = None
    link: HardwareNoteLinkValue | None = None


HardwareNoteValue: TypeAlias = Annotated[_Str | Annotated[HardwareNote, Tag("map")],
                                         _by_shape("a string or a map with title/body/link")]


class OmniTaskOverride(_Open):
    """Exact-hardware swap inside an omni task."""

    model_id: str | None = None
    extra_args: Args | None = None
    label: str | None = None
    endpoint: str | None = None
    vram_minimum_gb: Num | None = None
    description: str | None = None


class OmniTask(_Open):
    """One omni task declaration (a bare task id string is also accepted)."""

    id: str | None = None
    key: str | None = None
    label: str | None = None
    endpoint: str | None = None
    method: str | None = None
    model_id: str | None = None
    vram_minimum_gb: Num | None = None
    description: str | None = None
    axes: dict[str, Any] | None = None
    extra_args: Args | None = None
    hardware_overrides: dict[str, OmniTaskOverride | None] | None = None
    example: Any = None


OmniTaskValue: TypeAlias = Annotated[_Str | Annotated[OmniTask, Tag("map")], _by_shape("a task id or a task map")]


class OmniSection(_Model):
    """``omni``: tasks and serve options of an omni recipe (synthesis.md §10)."""

    tasks: tuple[OmniTaskValue, ...] | None = None
    port: Num | None = None
    serve_binary: str | None = None
    task_label: str | None = None
    task_hint: str | None = None
    task_axes: Any = None
    variant_label: str | None = None
    variant_hint: str | None = None


class Dependency(_Open):
    """An extra install step; the shape is free-form beyond these common keys."""

    label: str | None = None
    command: str | None = None
    note: str | None = None
    optional: bool | None = None


DependencyValue: TypeAlias = Annotated[_Str | Annotated[Dependency, Tag("map")], _by_shape("a command string or a map")]

_MinGpusEntry: TypeAlias = Annotated[_Int | _Float | Annotated[dict[str, Num | None], Tag("map")],
                                     _by_shape("a number or a map of numbers")]
StrategyMinGpus: TypeAlias = Annotated[
    _Int | _Float | Annotated[dict[str, _MinGpusEntry | None], Tag("map")],
    _by_shape("a number or a map of numbers (per strategy) and per-hardware maps"),
]


class RecipeModel(_Model):
    """A whole recipe file (``models/<org>/<repo>.yaml``)."""

    meta: Meta
    model: ModelSection
    features: dict[str, Feature | None] | None = None
    opt_in_features: StrList | None = None
    hardware_opt_in_features: dict[str, StrList | None] | None = None
    variants: dict[str, Variant]
    compatible_strategies: StrList | None = None
    default_strategy: str | None = None
    strategy_hardware: dict[str, HwStatusMap | None] | None = None
    strategy_min_gpus: StrategyMinGpus | None = None
    hardware_overrides: dict[str, RecipeHardwareOverride | None] | None = None
    strategy_overrides: dict[str, StrategyOverride | None] | None = None
    kv_offload_support: dict[str, str | None] | None = None
    kv_cache_strategy_hardware: dict[str, HwStatusMap | None] | None = None
    hardware_notes: dict[str, HardwareNoteValue | None] | None = None
    omni: OmniSection | None = None
    guide: str | None = None
    dependencies: tuple[DependencyValue, ...] | None = None
    advanced_options: Any = None
    hf_id: str | None = None


# --- taxonomy, strategies, kv stores ---------------------------------------------------------

GenerationValue: TypeAlias = Annotated[_Str | Annotated[StrList, Tag("list")], _by_shape("a string or a list of strings")]


#: a Kubernetes extended resource name: ``<vendor domain>/<name>``
DeviceResource = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")]


class GpuFacts(_Model):
    """``taxonomy.hardware_profiles.<id>.gpu_facts``: one accelerator's published figures for the performance
    estimate, field by field over the package's own (``vllm_recipes/perf/gpus.yaml``), with their source."""

    family: str | None = None
    #: dense peak TFLOP/s per tensor-core dtype (``bf16``, ``fp8``, ``fp4``; a missing dtype is not native)
    tflops: dict[str, Num] | None = None
    hbm_gb_s: Num | None = None
    link: str | None = None
    link_gb_s: Num | None = None
    scale_out_gb_s: Num | None = None
    source: str | None = None


class HardwareProfile(_Model):
    """``taxonomy.hardware_profiles.<id>``."""

    display_name: str | None = None
    description: str | None = None
    brand: str | None = None
    generation: GenerationValue | None = None
    gpu_generation: GenerationValue | None = None
    gpu_count: PosNum | None = None
    vram_gb: Num | None = None
    scalable: bool | None = None
    restricted: bool | None = None
    multi_node: bool | None = None
    arch: str | None = None
    #: Kubernetes extended resource of one accelerator (``nvidia.com/gpu``); ``export --to k8s``
    device_resource: DeviceResource | None = None
    gpu_facts: GpuFacts | None = None


class KvOffloadOption(_Model):
    """``taxonomy.kv_offload.<key>`` (synthesis.md §1.6)."""

    display_name: str | None = None
    label: str | None = None
    description: str | None = None
    order: Num | None = None
    group: str | None = None
    docs_url: str | None = None
    args: Args | None = None
    env: Env | None = None
    strategies: StrList | None = None
    brands: StrList | None = None
    requires_opt_in: bool | None = None
    install: str | None = None
    companion: Companion | None = None


class KvOffloadGroup(_Model):
    """``taxonomy.kv_offload_groups.<key>``: UI grouping of KV options."""

    display_name: str | None = None
    label: str | None = None
    order: Num | None = None
    sub_row_label: str | None = None
    docs_url: str | None = None
    description: str | None = None
    tooltip: str | None = None


class Frontend(_Model):
    """``taxonomy.frontends.<key>`` (extensions.md §1.3)."""

    display_name: str | None = None
    description: str | None = None
    env: Env | None = None


class TaxonomyModel(_Open):
    """``taxonomy.yaml``."""

    hardware_profiles: dict[str, HardwareProfile] | None = None
    kv_offload: dict[str, KvOffloadOption] | None = None
    kv_offload_groups: dict[str, KvOffloadGroup] | None = None
    frontends: dict[str, Frontend] | None = None
    tasks: Any = None
    strategies: Any = None


class StrategyRole(_Open):
    """``prefill`` / ``decode`` block of the pd_cluster strategy."""

    vllm_args: Args | None = None
    env: Env | None = None
    parallelism: str | None = None
    tp: Num | None = None
    parallel_flag: str | None = None


class StrategyModel(_Open):
    """``strategies/<name>.yaml`` (synthesis.md §1.4)."""

    name: str | None = None
    deploy_type: str | None = None
    display_name: str | None = None
    description: str | None = None
    orientation: str | None = None
    hardware_match: dict[str, Any] | None = None
    parallel_flag: str | None = None
    parallelism: str | None = None
    vllm_args: Args | None = None
    env: Env | None = None
    prefill: StrategyRole | None = None
    decode: StrategyRole | None = None
    router: dict[str, Any] | None = None


class KvStoreRouter(_Open):
    """Router of a Mooncake deployment."""

    policy: str | None = None
    install: str | None = None
    port: Num | None = None


KvInstall: TypeAlias = Annotated[_Str | Annotated[dict[str, str | None], Tag("map")],
                                 _by_shape("an install string or a brand map")]


class KvStoreVllm(_Open):
    """vLLM side of a Mooncake deployment."""

    vllm_args: Args | None = None
    env: Env | None = None
    install: KvInstall | None = None
    port: Num | None = None


class KvStorePdRole(_Open):
    """PD composition args of one role."""

    args: Args | None = None


class KvStorePd(_Open):
    """PD composition of a Mooncake deployment."""

    prefill: KvStorePdRole | None = None
    decode: KvStorePdRole | None = None


class MooncakeMaster(_Open):
    """The Mooncake master process."""

    command: str | None = None
    description: str | None = None


class MooncakeStoreConfig(_Open):
    """The optional standalone Mooncake store."""

    command: str | None = None
    description: str | None = None
    config: dict[str, Any] | None = None
    note: str | None = None


class MooncakeVllmConfig(_Open):
    """Per-instance Mooncake config template."""

    mode: str | None = None
    template: dict[str, Any] | None = None
    note: str | None = None


class KvStoreModel(_Open):
    """``kv_store/<name>.yaml``: a Mooncake deployment (synthesis.md §1.5)."""

    name: str | None = None
    deploy_type: str | None = None
    display_name: str | None = None
    description: str | None = None
    label: str | None = None
    order: Num | None = None
    router: KvStoreRouter | None = None
    vllm: KvStoreVllm | None = None
    pd: KvStorePd | None = None
    mooncake_master: MooncakeMaster | None = None
    mooncake_store_config: MooncakeStoreConfig | None = None
    mooncake_vllm_config: MooncakeVllmConfig | None = None
    min_vllm_version: Version | None = None
    default_instances: Num | None = None


class Platform(_Open):
    """``platforms.yaml`` entry (free-form beyond these keys)."""

    id: str | None = None
    name: str | None = None
    description: str | None = None
    url: str | None = None
    install: str | None = None


PlatformsValue: TypeAlias = Annotated[
    Annotated[tuple[Platform, ...], Tag("list")] | Annotated[dict[str, Platform | None], Tag("map")],
    _by_shape("a list or a map of platforms"),
]


class PlatformsModel(_Open):
    """``platforms.yaml``."""

    platforms: PlatformsValue | None = None
