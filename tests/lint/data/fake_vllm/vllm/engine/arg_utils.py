import argparse

from vllm.config import CompilationConfig, ModelConfig, VllmConfig


def get_kwargs(cls):
    raise NotImplementedError("the extractor never runs this")


class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        model_kwargs = get_kwargs(ModelConfig)
        model_group = parser.add_argument_group(title="ModelConfig")
        model_group.add_argument("--model", **model_kwargs["model"])
        model_group.add_argument("--tokenizer-mode", **model_kwargs["tokenizer_mode"])
        model_group.add_argument("--dtype", **model_kwargs["dtype"])
        model_group.add_argument("--max-model-len", **model_kwargs["max_model_len"])
        model_group.add_argument("--enforce-eager", **model_kwargs["enforce_eager"])
        model_group.add_argument("--served-model-name", **model_kwargs["served_model_name"])
        model_group.add_argument("--hf-overrides", **model_kwargs["hf_overrides"])
        model_group.add_argument("--swap-space", **model_kwargs["swap_space"])
        model_group.add_argument("--seed", type=int, default=0, help="Random seed.")
        model_group.add_argument("--old-thing", action="store_true", deprecated=True, help="Gone soon.")
        compilation_kwargs = get_kwargs(CompilationConfig)
        model_group.add_argument("--cudagraph-capture-sizes", **compilation_kwargs["cudagraph_capture_sizes"])
        vllm_kwargs = get_kwargs(VllmConfig)
        parser.add_argument("--compilation-config", "-cc", **vllm_kwargs["compilation_config"])
        return parser


class AsyncEngineArgs(EngineArgs):
    @staticmethod
    def add_cli_args(parser, async_args_only: bool = False):
        if not async_args_only:
            parser = EngineArgs.add_cli_args(parser)
        parser.add_argument("--enable-log-requests", action=argparse.BooleanOptionalAction, default=False)
        return parser
