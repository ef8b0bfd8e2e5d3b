"""Skills as folders: parsing SKILL.md, checking it against the Agent Skills spec, scaffolding."""

# Imported on first use (PEP 562), as in skillctl.bundle: reading a .skillignore or a version
# does not load the validator.
from skillctl.lazy import lazy_exports

_WHERE = {
    "diagnostics": ("CODES", "Diagnostic"),
    "model": ("Skill",),
    "discovery": ("discover",),
    "validate": ("SkillReport", "check_skill", "check_skill_any_profile", "load_skill", "validate_paths"),
}
__getattr__, __all__ = lazy_exports(__name__, globals(), _WHERE)
