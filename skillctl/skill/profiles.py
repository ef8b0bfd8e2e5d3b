"""Client profiles: the front-matter fields each agent client documents beyond the spec.

The Agent Skills specification allows six top-level fields. Clients read more: Claude Code's
``argument-hint`` or ``disable-model-invocation``, OpenClaw's gating block under
``metadata.openclaw``. Under the default profile (``spec``) those stay errors — a skill meant for
every client must not rely on them — but an author who targets one client checks that client's
rules with ``--profile``. A profile only *adds* what its client documents (fields and their
types, wider types for a spec field); every rule the spec states still applies.

Each list below is taken from the client's own documentation, named in ``source``. Types are the
documented ones; where a page gives none, the value's obvious type (a flag is a boolean).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skillctl.errors import SkillError

# Value kinds a profile can require.
STRING = "string"
BOOLEAN = "boolean"
MAPPING = "mapping"
STRINGS = "string or list of strings"

SPEC_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    source: str  # the documentation the field list comes from
    fields: dict[str, str] = field(default_factory=dict)  # extra top-level field -> kind
    # kinds accepted for allowed-tools (the spec: a space-separated string)
    allowed_tools: str = STRING
    # metadata keys whose value may be a mapping (the spec: string -> string)
    metadata_mappings: frozenset[str] = frozenset()
    # metadata keys with a documented kind and length limit: key -> (kind, max length)
    metadata_fields: dict[str, tuple[str, int]] = field(default_factory=dict)

    def allowed_fields(self) -> tuple[str, ...]:
        return SPEC_FIELDS + tuple(sorted(self.fields))


PROFILES: dict[str, Profile] = {
    "spec": Profile(
        "spec",
        "the Agent Skills specification",
        "https://agentskills.io/specification",
    ),
    "claude-code": Profile(
        "claude-code",
        "Claude Code",
        # "Frontmatter reference" table of the skills page.
        "https://code.claude.com/docs/en/skills#frontmatter-reference",
        fields={
            "when_to_use": STRING,
            "argument-hint": STRING,
            "arguments": STRINGS,
            "disable-model-invocation": BOOLEAN,
            "user-invocable": BOOLEAN,
            "model": STRING,
            "effort": STRING,
            "context": STRING,
            "agent": STRING,
            "hooks": MAPPING,
            "paths": STRINGS,
            "shell": STRING,
        },
        # "Space- or comma-separated string, or YAML list"
        allowed_tools=STRINGS,
    ),
    "codex": Profile(
        "codex",
        "OpenAI Codex",
        # Codex reads name, description and metadata.short-description from SKILL.md; its UI
        # metadata, policy and dependencies live in agents/openai.yaml, not in the front matter.
        "https://developers.openai.com/codex/skills",
        metadata_fields={"short-description": (STRING, 1024)},
    ),
    "copilot": Profile(
        "copilot",
        "GitHub Copilot (VS Code, Copilot CLI, cloud agent)",
        # "SKILL.md file format" → "Header" table. The page spelled the flag user-invokable
        # before it settled on user-invocable (the spelling Claude Code uses); both are read.
        "https://code.visualstudio.com/docs/copilot/customization/agent-skills",
        fields={
            "argument-hint": STRING,
            "user-invocable": BOOLEAN,
            "user-invokable": BOOLEAN,
            "disable-model-invocation": BOOLEAN,
        },
    ),
    "openclaw": Profile(
        "openclaw",
        "OpenClaw",
        # "Optional frontmatter keys" and "Gating" of the skills page; `version` from ClawHub's
        # "Skill format" page (https://docs.openclaw.ai/clawhub/skill-format).
        "https://docs.openclaw.ai/tools/skills",
        fields={
            "homepage": STRING,
            "user-invocable": BOOLEAN,
            "disable-model-invocation": BOOLEAN,
            "command-dispatch": STRING,
            "command-tool": STRING,
            "command-arg-mode": STRING,
            "version": STRING,
        },
        # the gating block (requires, os, install, primaryEnv…) and its legacy aliases
        metadata_mappings=frozenset({"openclaw", "clawdbot", "clawdis"}),
    ),
}

PROFILE_NAMES = tuple(PROFILES)


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise SkillError(f"unknown profile '{name}'; choose one of: {', '.join(PROFILE_NAMES)}") from None


def kind_matches(value: object, kind: str) -> bool:
    if kind == STRING:
        return isinstance(value, str)
    if kind == BOOLEAN:
        return isinstance(value, bool)
    if kind == MAPPING:
        return isinstance(value, dict)
    if kind == STRINGS:
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    raise AssertionError(kind)  # pragma: no cover - a kind added above without a check
