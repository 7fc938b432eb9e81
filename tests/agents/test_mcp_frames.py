"""The MCP stdio server answers a frame it cannot read with a JSON-RPC error (issue #28 item 10),
and keeps serving: raw lines written to a real ``vllm-recipes mcp`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_unparsable_frames_get_json_rpc_errors() -> None:
    lines = [json.dumps(INIT), "{not json", '{"jsonrpc": "2.0", "id": 7, "method": 5}', "[]",
             json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})]
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "vllm_recipes", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[dict] = []
    try:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any(a.get("id") == 2 for a in answers):
            line = proc.stdout.readline()  # stdin stays open until the last answer is read
            if not line:
                break
            answers.append(json.loads(line))
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    errors = [a["error"]["code"] for a in answers if "error" in a]
    assert -32700 in errors, answers
    assert len(errors) == 3, answers  # one per unreadable frame: not JSON, a bad method, not a message
    assert all(a.get("id") is None for a in answers if "error" in a)
    assert any(a.get("id") == 2 and "tools" in a.get("result", {}) for a in answers), answers  # still serving
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
