import os
from collections.abc import Callable
from typing import Any

environment_variables: dict[str, Callable[[], Any]] = {
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    "VLLM_USE_FAKE": lambda: bool(int(os.getenv("VLLM_USE_FAKE", "0"))),
}
