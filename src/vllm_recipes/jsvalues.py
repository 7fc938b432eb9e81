"""JavaScript value semantics the public recipe format is defined by (synthesis.md §0.2): exact output
depends on JS truthiness (empty lists and maps are *truthy*), ``||`` vs ``??`` and ``String(number)``,
so every stage uses these helpers instead of Python's truthiness."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

EMPTY: Mapping[str, Any] = {}
# All loaded YAML data is ``dict``/``tuple`` (FrozenDict subclasses dict); plain
# isinstance checks against concrete types are ~5x faster than against ABCs.


def truthy(v: Any) -> bool:
    """JS truthiness: only absent, false, 0, NaN and "" are falsy."""
    if v is None or v is False:
        return False
    if isinstance(v, bool):
        return True
    if isinstance(v, int | float):
        return v == v and v != 0
    if isinstance(v, str):
        return v != ""
    return True


def first_truthy(*vals: Any) -> Any:
    """JS ``a || b || c``; returns the last value when none is truthy."""
    for v in vals:
        if truthy(v):
            return v
    return vals[-1] if vals else None


def first_present(*vals: Any) -> Any:
    """JS ``a ?? b ?? c``."""
    for v in vals:
        if v is not None:
            return v
    return None


def number_or(v: Any, default: int) -> int | float:
    """JS ``typeof v === "number" ? v : default``."""
    return v if is_number(v) else default


def is_map(v: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(v, dict)


def is_list(v: Any) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    return isinstance(v, list | tuple)


def is_number(v: Any) -> TypeGuard[int | float]:
    """JS ``typeof v === "number"`` (booleans excluded)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def as_map(v: Any) -> Mapping[str, Any]:
    """``v`` when it is a mapping, else an empty one (JS ``v || {}`` for objects)."""
    return v if isinstance(v, dict) else EMPTY


def get(m: Any, key: Any) -> Any:
    """Property access that tolerates non-mappings (JS ``m?.[key]``)."""
    if isinstance(m, dict):
        return m.get(key)
    return None


def as_list(v: Any) -> Sequence[Any]:
    """``v`` when truthy list, else empty (``append X only if X is truthy``)."""
    return v if isinstance(v, list | tuple) else ()


def js_str(v: Any) -> str:
    """JS ``String(v)`` for the values recipes carry."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        return repr(v)
    if isinstance(v, list | tuple):
        return ",".join("" if x is None else js_str(x) for x in v)
    if isinstance(v, dict):
        return "[object Object]"
    return str(v)


def js_number(s: Any) -> float | int:
    """JS ``Number(s)`` for a CLI-ish token: numeric strings parse, "" is 0, else NaN."""
    if is_number(s):
        return s
    if not isinstance(s, str):
        return math.nan
    t = s.strip()
    low = t.lower()
    if not t:
        return 0
    if low.lstrip("+-") in ("inf", "nan"):  # (Python's spellings; JS reads "Infinity" only)
        return math.nan
    try:
        if low.startswith(("0x", "0o", "0b")):
            return int(t, 0)
        f = float(t)
    except ValueError:
        return math.nan
    return int(f) if f.is_integer() and "e" not in low and "." not in t else f


def js_floor_div(a: float, b: float) -> float | int:
    """``Math.floor(a / b)`` including JS division by zero (Infinity / NaN)."""
    if b == 0:
        if a == 0:
            return math.nan
        return math.inf if a > 0 else -math.inf
    q = a / b
    return math.floor(q) if math.isfinite(q) else q
