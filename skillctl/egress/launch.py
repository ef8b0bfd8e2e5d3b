"""Finding an interpreter with mitmproxy, and the command line that starts the proxy there.

mitmproxy and skillctl cannot always share one environment. On Python 3.11 the newest mitmproxy
is 11.0.2 (12.x needs Python 3.12), and it pins ``h11<=0.14`` because it uses h11's private
body readers, while the ``openai`` SDK's HTTP stack (httpx2/httpcore2) needs ``h11>=0.16``: pip
reports ResolutionImpossible. So the proxy runs as its own process, from the first of:

1. ``SKILLCTL_EGRESS_PYTHON``, an interpreter named explicitly;
2. the running interpreter, when it can import mitmproxy (``pip install 'skillctl[egress]'`` on
   Python 3.12 or newer, where mitmproxy 12 and openai agree on h11);
3. the environment ``scripts/setup.sh --tests`` makes beside the project's: ``<venv>/skillctl-egress``
   holding mitmproxy 11.0.2 alone.

Only skillctl's ``egress.rules``/``addon``/``proxy_main`` run there; they need the standard
library and mitmproxy, nothing else. skillctl's folder is *appended* to that interpreter's
``sys.path``, so its own packages (its h11 among them) win over anything beside skillctl.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from skillctl.egress.rules import LOOPBACK_ONLY_ENV
from skillctl.errors import EgressError

PYTHON_ENV = "SKILLCTL_EGRESS_PYTHON"
SIDE_ENV = "skillctl-egress"  # folder inside the running virtual environment
# What the proxy process inherits; secrets reach it on stdin only.
_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", LOOPBACK_ONLY_ENV)


def side_env_python() -> Path:
    return Path(sys.prefix) / SIDE_ENV / "bin" / "python"


def egress_python() -> str:
    """The interpreter that runs the proxy; ``EgressError`` saying how to get one otherwise."""
    explicit = os.environ.get(PYTHON_ENV)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise EgressError(f"{PYTHON_ENV}={explicit} is not an executable interpreter")
        return explicit
    if importlib.util.find_spec("mitmproxy") is not None:
        return sys.executable
    side = side_env_python()
    if side.exists():
        return str(side)
    raise EgressError(
        "network egress needs mitmproxy: pip install 'skillctl[egress]' (Python 3.12+), or on Python 3.11 "
        f"make its own environment at {side.parent.parent} (scripts/setup.sh --tests does: python3 -m venv … && "
        f"pip install mitmproxy==11.0.2), or point {PYTHON_ENV} at an interpreter that has it"
    )


def proxy_command(python: str) -> list[str]:
    root = str(Path(__file__).resolve().parents[2])
    code = f"import sys; sys.path.append({root!r}); from skillctl.egress.proxy_main import main; main()"
    # -I: no PYTHON* variables, no user site, no current folder on sys.path.
    return [python, "-I", "-c", code]


def proxy_environment() -> dict[str, str]:
    return {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
