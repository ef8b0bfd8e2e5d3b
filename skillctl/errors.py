"""Every error skillctl raises on purpose.

    SkillctlError                 base; the CLI prints ``str(err)`` and exits 1
    ├── SkillError                a skill folder or SKILL.md is unusable
    ├── VersionError              a version or range does not parse / resolves to nothing
    ├── BundleError               a bundle is malformed, hostile or over a limit
    ├── RegistryError             the registry refused, is unreachable or inconsistent
    │   ├── NotFoundError         no such skill / version
    │   ├── NoRegistryError       a folder registry opened to read is not there (nothing was created)
    │   ├── ImmutableVersionError a published version would change
    │   ├── IntegrityError        a digest does not match what was promised
    │   └── UnsupportedError      this kind of registry cannot do that (e.g. remove on OCI)
    ├── SourceError               a skill source (a git repository, a folder) cannot be read or is hostile
    ├── LockError                 skills.yaml / skills.lock is missing, stale or invalid
    ├── InstallError              a target folder cannot be written or cleaned safely (a link, no access)
    ├── SandboxError              the container (or local sandbox) cannot do what was asked
    │   ├── SandboxTimeout        the host-side deadline for a call passed
    │   └── EgressError           the run's network, egress proxy or firewall cannot be set up
    ├── EnvError                  a skill environment cannot be declared, resolved or built
    │   └── EnvIntegrityError     a package file's sha256 differs from the resolution or lock
    ├── ModelError                the model endpoint failed in a way the loop cannot absorb
    │   └── ContextTooLong        the conversation no longer fits the model
    ├── RunError                  a run cannot be set up or finished as asked (the runtime's branch)
    │   ├── LoadError             the skills a run asks for cannot be loaded together
    │   ├── StagingError          inputs cannot go into the sandbox, or its output cannot come out
    │   ├── RunMemoryError        a long-term memory folder is missing or cannot be used
    │   │   └── MemoryInUseError  another run holds the long-term memory a run asked for
    │   └── TranscriptError       a past run's transcript cannot be found or is not one
    ├── TrustError                a key, signature or trust policy refuses what was asked
    └── ConfigError               a config / script / policy file is invalid

Messages are one line, name what is wrong, and say what to do next. This module imports
nothing from skillctl so that every other module may import it.
"""

from __future__ import annotations


class SkillctlError(Exception):
    """Base of every expected failure; never shown with a traceback."""


class SkillError(SkillctlError):
    pass


class VersionError(SkillctlError):
    pass


class BundleError(SkillctlError):
    pass


class RegistryError(SkillctlError):
    pass


class NotFoundError(RegistryError):
    pass


class NoRegistryError(RegistryError):
    """A folder registry that is not there, opened by a command that only reads it: nothing is
    created. ``origin`` says where the path came from, so the message can say what to change:
    ``--registry`` or ``--from`` (an option), ``SKILLCTL_REGISTRY``, ``default`` (the user data
    folder), or ``""`` (a library caller's own ``url``)."""

    def __init__(self, path: str, origin: str = "") -> None:
        self.path, self.origin = str(path), origin
        if origin == "default":
            came = " (the default registry, in your user data folder: neither --registry nor SKILLCTL_REGISTRY is set)"
        else:
            came = f" (from {origin})" if origin else ""
        # the variable and the default apply to publish too; an option must be given to it again
        target = "" if origin in ("default", "SKILLCTL_REGISTRY") else f" --registry {self.path}"
        instead = "--from" if origin == "--from" else "--registry or SKILLCTL_REGISTRY"
        super().__init__(
            f"no registry at {self.path}{came}; publish a skill to create it "
            f"(skillctl publish SKILL_DIR{target}) or name an existing registry with {instead}"
        )

    def __reduce__(self):  # picklable with its two arguments (errors cross process pools)
        return (type(self), (self.path, self.origin))


class ImmutableVersionError(RegistryError):
    pass


class IntegrityError(RegistryError):
    pass


class UnsupportedError(RegistryError):
    """The registry lacks the capability (``Registry.capabilities`` says which it has). Raised
    by the operation itself, never replaced by silently doing nothing; the message says why and
    what to do instead."""


class SourceError(SkillctlError):
    pass


class LockError(SkillctlError):
    pass


class InstallError(SkillctlError):
    """A skill cannot be written into, or removed from, an agent's folder: a path in the way is a
    symbolic link or not a folder, or the file system refused. The message names the path."""


class SandboxError(SkillctlError):
    pass


class SandboxTimeout(SandboxError):
    pass


class EgressError(SandboxError):
    pass


class EnvError(SkillctlError):
    pass


class EnvIntegrityError(EnvError):
    pass


class ModelError(SkillctlError):
    pass


# What the person reads when the conversation no longer fits the model: it is theirs to handle
# (start a new conversation), not an alert.
CONTEXT_TOO_LONG_MESSAGE = (
    "this conversation has grown too long for the model to read at once; "
    "start a new one for the next step — everything built so far stays"
)


class ContextTooLong(ModelError):
    def __init__(self, detail: str = "") -> None:
        super().__init__(CONTEXT_TOO_LONG_MESSAGE + (f" ({detail})" if detail else ""))
        self.detail = detail


class RunError(SkillctlError):
    """The runtime's branch: what keeps a run from starting or from handing back its results.
    (Named so as not to shadow the builtin ``RuntimeError``.)"""


class LoadError(RunError):
    """The loader cannot put the requested skills into one run (e.g. one name, two versions)."""


class StagingError(RunError):
    """Files cannot be staged into the sandbox (a link, over a limit, two inputs of one name, an
    unsafe job archive) or its output copied back out (not an archive we accept, in the way)."""


class RunMemoryError(RunError):
    """A long-term memory folder is not there or cannot be read or written. (Not ``MemoryError``:
    that builtin means Python ran out of memory.)"""


class MemoryInUseError(RunMemoryError):
    """One run at a time per memory: callers that start many may wait and try again."""


class TranscriptError(RunError):
    pass


class TrustError(SkillctlError):
    """A signing key is unusable, a signature does not hold, or the project's trust policy
    refuses a skill version (unsigned, unknown signer, other digest, audit finding). The message
    names the version and the one reason."""


class ConfigError(SkillctlError):
    pass
