"""A chosen frontend that is also the recipe's default stays in the canonical URL, alone.

It is a choice (checked against the command, unlike the default), so the state keeps it; the
omission rules used to drop it, the round trip then failed and the address bar got every
parameter written out (``?hardware=h200&variant=default&strategy=...&install=...``).
"""

from __future__ import annotations

from typing import Any

V4 = "/deepseek-ai/DeepSeek-V4-Flash"  # default_frontend: rust


def test_the_recipe_default_frontend_chosen_is_a_short_canonical_url(client: Any) -> None:
    for query, canonical in (("frontend=rust", "frontend=rust"),
                             ("hardware=h100&frontend=rust", "hardware=h100&frontend=rust"),
                             ("frontend=rust&variant=default&nodes=1", "frontend=rust")):
        r = client.get(f"{V4}/builder?{query}")
        assert r.status_code == 200
        assert r.headers["x-canonical-url"] == f"{V4}?{canonical}"
        again = client.get(r.headers["x-canonical-url"].replace(V4, V4 + "/builder", 1))
        assert again.text == r.text  # the short URL rebuilds the very same selection


def test_the_links_of_such_a_page_keep_the_choice_and_nothing_more(client: Any) -> None:
    page = client.get(f"{V4}?hardware=h100&frontend=rust").text
    assert f'href="{V4}?hardware=b200&amp;frontend=rust" data-nav data-key="hardware:b200"' in page
    assert f'href="{V4}?frontend=rust" data-nav data-key="hardware:h200"' in page  # (h200: the default)
