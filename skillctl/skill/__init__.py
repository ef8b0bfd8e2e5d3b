"""Skills as folders: parsing SKILL.md, checking it against the Agent Skills spec, scaffolding."""

from skillctl.skill.diagnostics import CODES, Diagnostic
from skillctl.skill.model import Skill
from skillctl.skill.discovery import discover
from skillctl.skill.validate import SkillReport, check_skill, check_skill_any_profile, load_skill, validate_paths

__all__ = [
    "CODES", "Diagnostic", "Skill", "SkillReport", "check_skill", "check_skill_any_profile", "discover", "load_skill", "validate_paths",
]
