"""The knobs of context fitting; the defaults are the required ones (four at a time, a quarter)."""

from __future__ import annotations

from dataclasses import dataclass

from skillctl.context.notices import (
    CLEARED_NOTE,
    ROUNDS_CUT_NOTE,
    SUMMARY_HEADER,
    TURNS_CUT_NOTE,
)
from skillctl.errors import ConfigError


@dataclass(frozen=True)
class FitPolicy:
    """How ``fit`` makes a history fit a budget.

    ``batch_size``           tool results are cleared this many at a time, oldest first (4).
    ``keep_recent_fraction`` the newest tool results whose estimates add up to at most this
                             fraction of the budget are never cleared; the newest one never is,
                             whatever its size (a quarter).
    ``small_result_factor``  a tool result is "not much bigger than the note" — and so never
                             cleared — when its estimate is at most this multiple of the estimate
                             of its cleared form. Clearing it would break the prompt cache for
                             almost no room.
    ``cleared_note`` / ``turns_cut_note`` / ``rounds_cut_note`` / ``summary_header``
                             the texts sent in place of what was cleared, cut or summarised.
    """

    batch_size: int = 4
    keep_recent_fraction: float = 0.25
    small_result_factor: float = 2.0
    cleared_note: str = CLEARED_NOTE
    turns_cut_note: str = TURNS_CUT_NOTE
    rounds_cut_note: str = ROUNDS_CUT_NOTE
    summary_header: str = SUMMARY_HEADER

    def __post_init__(self) -> None:
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ConfigError(f"fit policy: batch_size must be a whole number ≥ 1, got {self.batch_size!r}")
        if not isinstance(self.keep_recent_fraction, (int, float)) or not 0 <= self.keep_recent_fraction <= 1:
            raise ConfigError(
                f"fit policy: keep_recent_fraction must be between 0 and 1, got {self.keep_recent_fraction!r}"
            )
        if not isinstance(self.small_result_factor, (int, float)) or self.small_result_factor < 1:
            raise ConfigError(
                f"fit policy: small_result_factor must be ≥ 1 (a multiple of the note's size), "
                f"got {self.small_result_factor!r}"
            )
        for field_name in ("cleared_note", "turns_cut_note", "rounds_cut_note", "summary_header"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"fit policy: {field_name} must be a non-empty text, got {value!r}")


DEFAULT_POLICY = FitPolicy()
