"""Our static assets, minified (readable sources, light pages) and fingerprinted in memory:
``/static/app.<hash>.js`` is cached for a year as ``immutable``; ``/static/app.js`` revalidates by ETag."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

IMMUTABLE = "public, max-age=31536000, immutable"
#: what the site and its API may be cached for (five minutes), then revalidated by ETag
REVALIDATE = "public, max-age=300"
#: the live API's answers: readable from any origin, never reused without asking (cached replies share it)
LIVE_HEADERS = MappingProxyType({"Access-Control-Allow-Origin": "*", "Cache-Control": "no-cache"})
#: public files (``llms.txt``, ``openapi.json``): readable from any origin, reused for five minutes
PUBLIC_HEADERS = MappingProxyType({"Access-Control-Allow-Origin": "*", "Cache-Control": REVALIDATE})
#: the kinds of file static/ holds
MEDIA_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}


def minified(suffix: str, data: bytes) -> bytes:
    """The bytes to serve for a static source file: CSS and JS without comments and spare blanks."""
    if suffix == ".css":
        import rcssmin  # type: ignore[import-untyped]  # ships no types

        return rcssmin.cssmin(data.decode("utf-8")).encode("utf-8")
    if suffix == ".js":
        import rjsmin  # type: ignore[import-untyped]  # ships no types

        return rjsmin.jsmin(data.decode("utf-8")).encode("utf-8")
    return data


@dataclass
class Asset:
    name: str
    data: bytes
    digest: str
    media_type: str

    @property
    def fingerprinted(self) -> str:
        stem, dot, suffix = self.name.rpartition(".")
        return f"{stem}.{self.digest}.{suffix}" if dot else f"{self.name}.{self.digest}"

    @property
    def etag(self) -> str:
        return f'"{self.digest}"'


class AssetStore:
    """Every file of one directory, by plain and by fingerprinted name."""

    def __init__(self, directory: Path) -> None:
        self.by_name: dict[str, Asset] = {}
        self.by_fingerprint: dict[str, Asset] = {}
        for path in sorted(directory.iterdir()):
            if not path.is_file() or path.name.startswith("."):
                continue
            data = minified(path.suffix.lower(), path.read_bytes())
            asset = Asset(path.name, data, hashlib.sha256(data).hexdigest()[:12],
                          MEDIA_TYPES.get(path.suffix.lower(), "application/octet-stream"))
            self.by_name[asset.name] = asset
            self.by_fingerprint[asset.fingerprinted] = asset

    def url(self, name: str) -> str:
        """The fingerprinted URL of asset ``name`` (raises ``KeyError`` for an unknown asset)."""
        return "/static/" + self.by_name[name].fingerprinted

    def find(self, name: str) -> tuple[Asset, bool] | None:
        """``(asset, immutable)`` for a request path under ``/static/``."""
        if name in self.by_fingerprint:
            return self.by_fingerprint[name], True
        return (self.by_name[name], False) if name in self.by_name else None
