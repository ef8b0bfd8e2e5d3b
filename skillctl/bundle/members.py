"""The rules on a bundle's member list as a whole, applied one member at a time.

``MemberTally`` is fed every member in archive order (by the reader) or every entry about to be
written (by the packer), so both sides enforce exactly the same rules: safe paths, one top
folder, no duplicates or collisions, a file is never also a folder, and the count and size caps.
It raises :class:`Refused`, which each caller turns into a BundleError that names its source.
"""

from __future__ import annotations

from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.paths import collision_key, member_path_problem

SKILL_FILE = "SKILL.md"

RULE_ONE_TOP = "one top folder"
RULE_TOP_NAME = "top folder equals the skill name"
RULE_NO_DUPLICATES = "no duplicate members"
RULE_NO_COLLISIONS = "no paths that differ only in case or Unicode normalisation"
RULE_FILE_OR_FOLDER = "a path is either a file or a folder"
RULE_HAS_SKILL = "SKILL.md at the top of the skill folder"
RULE_MAX_FILES = "max_files"
RULE_MAX_DIRS = "max_dirs"
RULE_MAX_FILE_SIZE = "max_file_size"
RULE_MAX_TOTAL_SIZE = "max_total_size"


class Refused(Exception):
    """A member breaks a rule. ``member`` is the name as found (None when the rule is about the
    archive as a whole, e.g. its gzip stream); ``rule`` names the rule.

    A plain class, not a frozen dataclass: Python and contextlib assign ``__traceback__`` on
    exceptions, which a frozen dataclass would refuse."""

    def __init__(self, member: str | None, what: str, rule: str) -> None:
        super().__init__(member, what, rule)
        self.member = member
        self.what = what
        self.rule = rule

    def __str__(self) -> str:
        where = "" if self.member is None else f"member {self.member!r}: "
        return f"{where}{self.what} (rule: {self.rule})"


class MemberTally:
    """Accumulates members and refuses the first one that breaks a rule.

    Paths given to :meth:`add_file` / :meth:`add_dir` are full member paths (top folder first,
    no trailing slash). Sizes are checked before the caller reads a file's bytes, so a member
    over the cap is refused without buffering it.
    """

    def __init__(self, limits: BundleLimits, expected_name: str | None = None) -> None:
        self.limits = limits
        self.expected_name = expected_name
        self.top: str | None = None
        self.explicit: set[str] = set()
        self.kinds: dict[str, str] = {}  # path → "file" | "dir", implicit parents included
        self.keys: dict[str, str] = {}  # collision key → first path seen with it
        self.files = 0
        self.total = 0

    @property
    def dirs(self) -> int:
        return len(self.kinds) - self.files

    def _check_path(self, path: str, is_dir: bool) -> None:
        problem = member_path_problem(path, self.limits)
        if problem is not None:
            raise Refused(path, problem.what, problem.rule)
        top, _, rest = path.partition("/")
        if not rest and not is_dir:
            raise Refused(path, "file at the top level, outside the skill folder", RULE_ONE_TOP)
        if self.top is None:
            if self.expected_name is not None and top != self.expected_name:
                raise Refused(path, f"top folder is {top!r}, expected {self.expected_name!r}", RULE_TOP_NAME)
            self.top = top
        elif top != self.top:
            raise Refused(path, f"second top folder {top!r} next to {self.top!r}", RULE_ONE_TOP)
        if path in self.explicit:
            raise Refused(path, "appears twice in the bundle", RULE_NO_DUPLICATES)

    def _claim(self, path: str, kind: str, member: str) -> None:
        """Record ``path`` as ``kind``; refuse a file/folder clash or a case/normalisation twin."""
        known = self.kinds.get(path)
        if known is not None:
            if known != kind:
                raise Refused(member, f"{path!r} is both a file and a folder", RULE_FILE_OR_FOLDER)
            return
        key = collision_key(path)
        twin = self.keys.get(key)
        if twin is not None:
            raise Refused(member, f"{path!r} collides with {twin!r} on case-insensitive file systems", RULE_NO_COLLISIONS)
        self.keys[key] = path
        self.kinds[path] = kind
        if kind == "dir" and self.dirs > self.limits.max_dirs:
            raise Refused(member, f"more than {self.limits.max_dirs} folders", RULE_MAX_DIRS)

    def _claim_parents(self, path: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts)):
            self._claim("/".join(parts[:i]), "dir", path)

    def add_dir(self, path: str) -> None:
        self._check_path(path, is_dir=True)
        self._claim_parents(path)
        self._claim(path, "dir", path)
        self.explicit.add(path)

    def add_file(self, path: str, size: int) -> None:
        self._check_path(path, is_dir=False)
        if size > self.limits.max_file_size:
            raise Refused(path, f"file is {size} bytes, over the limit of {self.limits.max_file_size}", RULE_MAX_FILE_SIZE)
        if self.files + 1 > self.limits.max_files:
            raise Refused(path, f"more than {self.limits.max_files} files", RULE_MAX_FILES)
        if self.total + size > self.limits.max_total_size:
            raise Refused(
                path, f"files add up to more than {self.limits.max_total_size} bytes unpacked", RULE_MAX_TOTAL_SIZE
            )
        self._claim_parents(path)
        self._claim(path, "file", path)
        self.explicit.add(path)
        self.files += 1
        self.total += size

    def finish(self) -> str:
        """The top folder's name, once every member has been added. Refuses an empty bundle and
        one without ``SKILL.md`` at the top of its folder."""
        if self.top is None:
            raise Refused(None, "the bundle has no members", RULE_ONE_TOP)
        if self.kinds.get(f"{self.top}/{SKILL_FILE}") != "file":
            raise Refused(f"{self.top}/{SKILL_FILE}", "missing; a bundle holds one skill", RULE_HAS_SKILL)
        return self.top
