"""Skills as folders: parsing SKILL.md, checking it against the Agent Skills spec, scaffolding."""

# Imported on first use (PEP 562), as in skillctl.bundle: reading a .skillignore or a version
# does not load the validator.
_WHERE = {
    "diagnostics": ("CODES", "Diagnostic"),
    "model": ("Skill",),
    "discovery": ("discover",),
    "validate": ("SkillReport", "check_skill", "load_skill", "validate_paths"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'skillctl.skill' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"skillctl.skill.{module}"), name)
    globals()[name] = value
    return value
