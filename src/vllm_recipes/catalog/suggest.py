"""The one "did you mean" rule of validation and the release lint for a misspelt key or flag (only difflib: lint runs
on every ``command``). Unknown model ids and GPU names list several close names instead (``Catalog.close_matches``,
``fit.hardware.close_names``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: similarity (difflib's ratio) of the closest name worth suggesting, and of a second one shown beside it;
#: below 0.7 long names sharing a prefix look alike (VLLM_ATTENTION_BACKEND ~ VLLM_VIDEO_LOADER_BACKEND: 0.64)
SUGGEST_CUTOFF = 0.7
SUGGEST_SECOND_CUTOFF = 0.75


def likely_meant(name: str, candidates: Iterable[str]) -> list[str]:
    """The names a typo most likely meant: the closest one (``rtx6000`` -> ``rtx_pro_6000``), and a runner-up
    only when it is about as close (``h00`` -> ``h200`` or ``h100``), so a merely similar second name is not
    offered."""
    got = difflib.get_close_matches(name, candidates, n=2, cutoff=SUGGEST_CUTOFF)
    if len(got) == 2 and difflib.SequenceMatcher(None, got[1], name).ratio() < SUGGEST_SECOND_CUTOFF:
        del got[1]
    return got
