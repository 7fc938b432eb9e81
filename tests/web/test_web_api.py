"""The live JSON API: static files byte-identical to ``build-api``, ETags, /api/resolve, OpenAPI."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient


@pytest.fixture(scope="module")
def built_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The API as ``vllm-recipes build-api`` writes it (skipped if that command is not there)."""
    try:
        from vllm_recipes.cli import api_cmds  # noqa: F401
    except ImportError:
        pytest.skip("build-api command not available")
    from vllm_recipes.cli.main import cli

    out = tmp_path_factory.mktemp("api") / "public"
    res = CliRunner().invoke(cli, ["build-api", str(out), "--jobs", "1"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out


def test_every_static_file_is_served_byte_identical(client: TestClient, built_dir: Path) -> None:
    files = [p for p in built_dir.rglob("*.json") if not p.name.startswith(".")]
    assert len(files) > 50
    for p in files:
        rel = p.relative_to(built_dir).as_posix()
        r = client.get("/" + rel)
        assert r.status_code == 200, rel
        assert r.content == p.read_bytes(), rel
        assert r.headers["content-type"].startswith("application/json")
        assert r.headers["cache-control"].startswith("public")
        assert r.headers["access-control-allow-origin"] == "*"


def test_etag_and_304(client: TestClient) -> None:
    r = client.get("/models.json")
    tag = r.headers["etag"]
    # compressed (the client accepts gzip): the same validator as the identity body (Starlette's gzip middleware)
    assert r.headers["content-encoding"] == "gzip" and len(tag) > 10
    plain = client.get("/models.json", headers={"Accept-Encoding": "identity"})
    assert plain.headers["etag"] == tag and "content-encoding" not in plain.headers
    assert client.get("/models.json", headers={"If-None-Match": tag}).status_code == 304
    assert client.get("/models.json", headers={"If-None-Match": f'"x", {tag}'}).status_code == 304
    assert client.get("/models.json", headers={"If-None-Match": '"other"'}).status_code == 200
    other = client.get("/taxonomy.json").headers["etag"]
    assert other != tag


def test_unknown_api_paths_are_json_404(client: TestClient) -> None:
    for path in ("/nope.json", "/deepseek-ai/DeepSeek-V4.1-Flash/hw/zzz.json", "/../../etc/passwd.json",
                 "/strategies/../taxonomy.json.json", "/api/nothing"):
        r = client.get(path)
        assert r.status_code == 404, path
        if path.endswith(".json") or path.startswith("/api/"):
            assert r.headers["content-type"].startswith("application/json"), path
            assert "error" in r.json()


def test_resolve_shape(client: TestClient, web: SimpleNamespace) -> None:
    r = client.get("/api/resolve", params={"model": web.V41})
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["rendering", "explain", "selection", "commands", "fit"]  # fit: our addition
    assert body["rendering"]["hardware"] == "gb200"
    assert body["rendering"]["frontend"] == "rust"
    assert body["selection"]["url"] == "/" + web.V41
    assert body["commands"][0]["text"].startswith("docker run")


def test_resolve_matches_cli_json(client: TestClient, web: SimpleNamespace) -> None:
    import json

    out = web.run_cli(["command", web.V41, "--hardware", "mi355x", "--strategy", "pd_cluster", "--format", "json"])
    api = client.get("/api/resolve", params={"model": web.V41, "hardware": "mi355x", "strategy": "pd_cluster"}).json()
    assert api["rendering"] == json.loads(out)


def test_resolve_variant_model_id(client: TestClient) -> None:
    r = client.get("/api/resolve", params={"model": "nvidia/DeepSeek-V4-Flash-NVFP4"})
    assert r.status_code == 200
    assert r.json()["selection"]["variant"] == "nvfp4"


@pytest.mark.parametrize("params,param", [
    ({}, "model"),
    ({"model": "nobody/Nothing"}, "model"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "hardware": "zz"}, "hardware"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "nodes": "x"}, "nodes"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "nodes": "40"}, "nodes"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "strategy": "kv_store_centralized_mooncake"}, "strategy"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "features": "nope"}, "features"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "fmode": "broken"}, "fmode"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "frontend": "go"}, "frontend"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "install": "rpm"}, "install"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "colour": "red"}, "colour"),
    ({"model": "deepseek-ai/DeepSeek-V4.1-Flash", "prefill_nodes": "2"}, "strategy"),
])
def test_resolve_bad_parameters_are_400(client: TestClient, params: dict[str, str], param: str) -> None:
    r = client.get("/api/resolve", params=params)
    assert r.status_code == 400, r.text
    body = r.json()
    assert set(body) == {"error", "param", "choices"}
    assert body["param"] == param
    assert isinstance(body["choices"], list)


def test_resolve_hardware_error_lists_choices(client: TestClient, web: SimpleNamespace) -> None:
    body = client.get("/api/resolve", params={"model": web.V41, "hardware": "tpu9"}).json()
    assert "gb200" in body["choices"]


def test_openapi(client: TestClient) -> None:
    spec = client.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    assert "/api/resolve" in spec["paths"]
    names = {p["name"] for p in spec["paths"]["/api/resolve"]["get"]["parameters"]}
    assert {"model", "hardware", "variant", "strategy", "features", "fmode", "kv_offload", "prefill_nodes",
            "frontend", "install", "router"} <= names
    assert "/models.json" in spec["paths"] and "/{org}/{repo}/hw/{hardware}.json" in spec["paths"]


def test_openapi_spec_edits_do_not_reach_the_next_spec() -> None:
    from vllm_recipes.web.openapi import openapi_spec

    spec = openapi_spec()
    spec["paths"]["/api/health"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["x"] = 1
    spec["components"]["schemas"]["Error"]["properties"]["error"]["type"] = "number"
    assert openapi_spec() != spec
    assert openapi_spec()["components"]["schemas"]["Error"]["properties"]["error"] == {"type": "string"}
