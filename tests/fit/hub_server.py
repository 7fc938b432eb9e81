"""A local Hugging Face Hub over real HTTP for the fit tests: ``/{repo}/resolve/{rev}/{file}`` with ETag,
commit and Range headers, which is all ``hf_hub_download`` and ``get_safetensors_metadata`` ask for.

Files are bytes in memory; safetensors files are real headers (8-byte length + JSON) followed by zeros,
so the client parses exactly what it would parse from the Hub. Every request is recorded.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"
DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1, "I8": 1}


class Blob:
    """A file of ``size`` bytes that starts with ``head`` and is zeros after it (served lazily)."""

    def __init__(self, head: bytes, size: int) -> None:
        self.head, self.size = head, size

    def __len__(self) -> int:
        return self.size

    def slice(self, start: int, end: int) -> bytes:
        part = self.head[start:end]
        return part + bytes(max(0, end - start - len(part)))


def safetensors_file(tensors: Mapping[str, tuple[str, list[int]]]) -> Blob:
    """A real safetensors file: header with offsets, then (lazily) zero bytes for the data."""
    header: dict[str, object] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = DTYPE_BYTES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    head = struct.pack("<Q", len(raw)) + raw
    return Blob(head, len(head) + offset)


class Hub:
    def __init__(self) -> None:
        self.files: dict[tuple[str, str], bytes | Blob] = {}
        self.requests: list[str] = []

    def add(self, repo: str, filename: str, data: bytes | Blob | str | Mapping[str, object]) -> None:
        if isinstance(data, Mapping):
            data = json.dumps(data)
        self.files[(repo, filename)] = data.encode() if isinstance(data, str) else data

    def add_sharded(self, repo: str, shards: Mapping[str, Mapping[str, tuple[str, list[int]]]]) -> None:
        """``model-0000N.safetensors`` shards and their ``model.safetensors.index.json``."""
        weight_map = {}
        total = 0
        for fname, tensors in shards.items():
            blob = safetensors_file(tensors)
            self.add(repo, fname, blob)
            weight_map.update({t: fname for t in tensors})
            total += len(blob) - len(blob.head)
        self.add(repo, "model.safetensors.index.json", {"metadata": {"total_size": total}, "weight_map": weight_map})


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _find(self) -> bytes | Blob | None:
            hub.requests.append(f"{self.command} {self.path}")
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                return None
            return hub.files.get(("/".join(parts[:2]), "/".join(parts[4:])))

        def _answer(self, body: bool) -> None:
            data = self._find()
            if data is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end, status = 0, len(data), 200
            rng = self.headers.get("Range") or self.headers.get("range")
            if rng and rng.startswith("bytes="):
                a, _, b = rng[6:].partition("-")
                start, end, status = int(a), min(int(b) + 1 if b else len(data), len(data)), 206
            chunk = data.slice(start, end) if isinstance(data, Blob) else data[start:end]
            tag = hashlib.sha1(data.head if isinstance(data, Blob) else data).hexdigest()
            self.send_response(status)
            self.send_header("ETag", f'"{tag}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", str(len(chunk)))
            self.end_headers()
            if body:
                self.wfile.write(chunk)

        def do_HEAD(self) -> None:
            self._answer(False)

        def do_GET(self) -> None:
            self._answer(True)

    return Handler


@contextmanager
def serve(hub: Hub, port: int = 0) -> Iterator[str]:
    """Serve ``hub`` on a local port (default: a free one); yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(hub))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
