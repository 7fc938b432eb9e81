"""The seed goldens (tests/golden/expected) as our renderer should write them today.

The reference files are kept exactly as the reference wrote them; the one documented deviation is applied here,
once, for every test that compares against them.
"""

from __future__ import annotations

import re
from typing import Any


def colocated_dep_fix(obj: dict[str, Any]) -> dict[str, Any]:
    """The reference's rendering with our documented deviation (docs/decisions.md, "Co-located PD DEP"):
    a co-located DEP pool runs one rank per GPU it owns (half the node), not one per GPU of the node."""
    new_intra: list[int] = []
    old_intra: list[int] = []
    for role in ("prefill", "decode"):
        r = obj.get(role)
        if not isinstance(r, dict) or r.get("nodes") != 0 or r.get("parallelism") != "dep":
            continue
        old, new = r["dpLocal"], max(1, r["poolGpus"] // r["tp"])
        old_intra.append(old)
        new_intra.append(new)
        r.update(dpLocal=new, dpSize=new)
        for key in ("argv", "docker_argv"):
            toks = r.get(key) or []
            for i in range(1, len(toks)):
                if toks[i - 1] in ("--data-parallel-size", "--data-parallel-size-local") and toks[i] == str(old):
                    toks[i] = str(new)
        for key in ("command", "docker_command"):
            if isinstance(r.get(key), str):
                r[key] = re.sub(rf"(--data-parallel-size(?:-local)? ){old}\b", rf"\g<1>{new}", r[key])
    router = obj.get("router")
    if new_intra and isinstance(router, dict) and isinstance(router.get("command"), str):
        router["command"] = router["command"].replace(f"--intra-node-data-parallel-size {max(old_intra)}",
                                                      f"--intra-node-data-parallel-size {max(new_intra)}")
    return obj
