"""The runtime: load skills into a sandbox and run an agent there.

    from skillctl.runtime import RunSpec, run
    result = run(RunSpec(task="How many words are in notes.txt?", skills=["tally"],
                         model="script:examples/demo/demo.script.yaml", inputs=[Path("notes.txt")]))

``run`` (``runner``) wires what a run needs; ``loop`` is the agent loop, ``stops`` every way it
ends, ``loader`` copies skills in, ``tools`` the shell tool, ``approval`` the command policy,
``transcript`` the full record. Names are imported on first use, so ``skillctl.runtime.loader``
stays cheap to import.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "RunSpec": "skillctl.runtime.spec",
    "RunResult": "skillctl.runtime.result",
    "CheckResult": "skillctl.runtime.result",
    "Runner": "skillctl.runtime.runner",
    "run": "skillctl.runtime.runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'skillctl.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
