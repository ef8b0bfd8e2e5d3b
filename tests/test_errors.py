"""The error tree: every area raises a class of its own, and the tree drawn in the module's
docstring is the tree in the code."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import skillctl
from skillctl import errors


def test_no_module_raises_the_bare_base_class() -> None:
    root = Path(skillctl.__file__).parent
    bare = [f"{p.relative_to(root)}:{n}" for p in sorted(root.rglob("*.py"))
            for n, line in enumerate(p.read_text("utf-8").splitlines(), 1) if "raise SkillctlError(" in line]
    assert bare == [], "raise the area's own class (skillctl/errors.py) instead of SkillctlError at: " + ", ".join(bare)


def test_the_drawn_tree_is_the_class_tree() -> None:
    drawn: dict[str, str] = {}
    stack: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        m = re.match(r"^\s{4}((?:│   |    )*)(?:[├└]── )?([A-Z]\w+)\s", line + " ")
        if not m:
            continue
        depth = len(m.group(1)) // 4 + (1 if "──" in line else 0)
        del stack[depth:]
        if stack:
            drawn[m.group(2)] = stack[-1]
        stack.append(m.group(2))
    classes = {n: c for n, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.SkillctlError)}
    actual = {n: c.__mro__[1].__name__ for n, c in classes.items() if c is not errors.SkillctlError}
    assert drawn == actual
