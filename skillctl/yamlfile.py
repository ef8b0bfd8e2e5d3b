"""Reading a YAML file that a person wrote (script, approval policy, skills.yaml).

Every failure is one line of the caller's error class naming the file and, for a syntax error
or a document nested past ``skillctl.nesting``'s bound, ``path:line:column`` — the same location
shape the validator prints — so it can be clicked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from skillctl.errors import SkillctlError
from skillctl.fsutil import read_regular_text
from skillctl.nesting import NestingError, check_yaml


def read_yaml(path: str | Path, *, error: type[SkillctlError], missing: str) -> Any:
    """The parsed content of ``path`` (``yaml.safe_load``). ``missing`` is the whole message for
    a file that does not exist (say what to do)."""
    p = Path(path)
    try:
        text = read_regular_text(p)  # a FIFO named here must not hang the command
    except FileNotFoundError:
        raise error(missing) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read {p}: {exc}") from None
    try:
        check_yaml(text)  # before the load, which recurses once per level (and through aliases)
        return yaml.safe_load(text)
    except NestingError as exc:
        raise error(f"{p}:{exc.line}:{exc.column}: {exc.problem}; flatten it") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{p}{where}: not valid YAML: {problem}") from None
