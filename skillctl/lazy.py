"""Package names imported on first use (PEP 562), for packages whose ``__init__`` re-exports
what their submodules define: ``from skillctl.bundle import pack`` then loads only ``pack``'s
module, so a command that needs one piece does not pay for the rest."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, namespace: dict[str, Any], where: Mapping[str, Sequence[str]]) -> tuple[Callable[[str], Any], list[str]]:
    """(``__getattr__``, ``__all__``) for ``package``: each name of ``where[submodule]`` comes
    from ``package.submodule`` when first asked for, and is kept in ``namespace`` after."""
    module_of = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__, sorted(module_of)
