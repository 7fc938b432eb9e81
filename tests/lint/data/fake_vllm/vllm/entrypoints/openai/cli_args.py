import json

from vllm.config import config
from vllm.engine.arg_utils import AsyncEngineArgs, optional_type


@config
class FrontendArgs:
    host: str | None = None
    port: int = 8000
    tool_call_parser: str | None = None
    enable_auto_tool_choice: bool = False
    allowed_origins: list[str] = None

    @staticmethod
    def add_cli_args(parser):
        from vllm.engine.arg_utils import get_kwargs

        frontend_kwargs = get_kwargs(FrontendArgs)
        frontend_kwargs["allowed_origins"]["type"] = json.loads
        del frontend_kwargs["allowed_origins"]["nargs"]
        frontend_kwargs["tool_call_parser"]["type"] = optional_type(str)
        for key, value in frontend_kwargs.items():
            parser.add_argument(f"--{key.replace('_', '-')}", **value)
        return parser


def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?")
    parser.add_argument("--headless", action="store_true", default=False)
    parser = FrontendArgs.add_cli_args(parser)
    parser = AsyncEngineArgs.add_cli_args(parser)
    return parser
