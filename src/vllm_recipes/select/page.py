"""Renamed to :mod:`vllm_recipes.select.state` (the builder state, for every front end, not
only the page). This alias keeps imports written before the rename working while the
branches of this round merge; delete it once none imports ``select.page``."""

from .state import *  # noqa: F403
from .state import (  # noqa: F401 - the names a star import leaves out
    ADVANCED_OPTIONS,
    MAX_KV_INSTANCES,
    POOL_MODE_IDS,
    AdvancedOption,
    advanced_options_for,
)
