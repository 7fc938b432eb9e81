"""Edge: run the first GPU tool found on ``PATH`` and hand its output to the parsers of :mod:`.hardware`."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable

from .hardware import PARSERS, DetectedGpu, DetectionError

COMMANDS: dict[str, list[str]] = {
    "nvidia-smi": ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
    "amd-smi": ["amd-smi", "static", "--asic", "--vram", "--json"],
    "rocm-smi": ["rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"],
    "npu-smi": ["npu-smi", "info"],
}


class NoGpuTool(LookupError):
    """None of the GPU tools is installed."""


def detect_gpus(which: Callable[[str], str | None] = shutil.which,
                run: Callable[[list[str]], str] | None = None) -> tuple[str, list[DetectedGpu]]:
    """(tool, GPUs) from the first tool on PATH; :class:`NoGpuTool` when none is."""
    for tool, argv in COMMANDS.items():
        if which(tool) is None:
            continue
        try:
            out = run(argv) if run else subprocess.run(argv, capture_output=True, text=True, timeout=20,
                                                       check=True).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            raise DetectionError(f"{tool} failed: {exc}") from None
        return tool, PARSERS[tool](out)
    raise NoGpuTool("no GPU tool found (looked for " + ", ".join(COMMANDS) + ")")
