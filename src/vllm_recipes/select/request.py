"""What a user asks of the builder (:class:`PageRequest`) and how a choice is refused
(:class:`SelectionError`), apart from :mod:`.state` that answers it: a front end that only
names a recipe (``vllm-recipes show``) imports these without the selection machinery."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .options import Style, spell


class SelectionError(ValueError):
    """A user choice that cannot be honoured; names the parameter and the valid choices."""

    def __init__(self, param: str, message: str, choices: Sequence[str] = ()) -> None:
        self.param = param
        #: the message with :func:`~.options.flag` markers (spelled per reader by :meth:`text`)
        self.template = message
        self.message = spell(message, "url")
        self.choices = list(choices)
        super().__init__(self.text("url"))

    def text(self, style: Style = "url") -> str:
        """The refusal with option names as the reader types them (``cli``: ``--prefill-rank``)."""
        return spell(self.template, style) + (f" Valid choices: {', '.join(self.choices)}." if self.choices else "")

    def to_dict(self) -> dict[str, Any]:
        return {"error": str(self), "param": self.param, "choices": self.choices}


@dataclass(frozen=True)
class PageRequest:
    """Raw user choices; ``None`` means "not given" (take the default)."""

    hardware: str | None = None
    variant: str | None = None
    strategy: str | None = None
    nodes: int | None = None
    #: a full feature list (URL ``features=``) replacing the defaults
    features: tuple[str, ...] | None = None
    #: features to switch on / off relative to the defaults (CLI)
    add_features: tuple[str, ...] = ()
    remove_features: tuple[str, ...] = ()
    fmode: tuple[tuple[str, str], ...] = ()
    advanced: tuple[str, ...] = ()
    #: raw extra argument tokens (CLI ``--arg``)
    extra_args: tuple[str, ...] = ()
    kv_offload: str | None = None
    kv_instances: int | None = None
    kv_instance: int | None = None
    prefill_nodes: int | None = None
    decode_nodes: int | None = None
    prefill_mode: str | None = None
    decode_mode: str | None = None
    prefill_rank: int | None = None
    decode_rank: int | None = None
    frontend: str | None = None
    install: str | None = None
    pd_router: str | None = None
    task: str | None = None
