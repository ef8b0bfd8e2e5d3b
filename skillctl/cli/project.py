"""The project commands: ``lock``, ``install``, ``sync``, ``add``, ``remove``, ``update``,
``outdated`` — thin over ``skillctl.project.workflow``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

import click

from skillctl.cli.common import (emit_json, format_option, given_access, library_errors, output_option, progress, registry_opener,
                                 registry_option, registry_origin)
from skillctl.project.spec import LOCK_FILE, REQUIREMENTS_FILE
from skillctl.words import count

_req_opt = click.option("--requirements", "req_path", type=click.Path(dir_okay=False, path_type=Path),
                        default=Path(REQUIREMENTS_FILE), show_default=True, help="The project file: declared skills and their sources.")
_lock_opt = click.option("--lock", "lock_path", type=click.Path(dir_okay=False, path_type=Path), default=Path(LOCK_FILE),
                         show_default=True, help="The lockfile.")
_env_opts = [
    click.option("--index-url", "index", envvar="SKILLCTL_INDEX_URL", metavar="URL",
                 help="Package index for the skills' declared requirements. Env: SKILLCTL_INDEX_URL (else UV_INDEX_URL, PIP_INDEX_URL, PyPI)."),
    click.option("--extra-index-url", "extra_index", multiple=True, envvar="SKILLCTL_EXTRA_INDEX_URL", metavar="URL",
                 help="Another package index; repeatable (searched before --index-url, as uv does). Env: SKILLCTL_EXTRA_INDEX_URL."),
    click.option("--allow-sdist", is_flag=True, help="Accept source distributions where no wheel fits (built in a throwaway container, never here)."),
    click.option("--image", metavar="IMAGE", help="Agent image whose Python the environment is resolved for (default: the one `skillctl image build` makes)."),
    click.option("--ignore-requires-python", "ignore_requires_python", multiple=True, metavar="SKILL",
                 help="Use SKILL although its requires-python excludes the agent image's Python (its scripts run there all "
                 "the same); recorded in the lock. Repeatable. Lasting: environment.ignore-requires-python in skills.yaml."),
]
_target_opts = [
    click.option("--agent", "agents", multiple=True, metavar="NAME",
                 help="Install into this agent's skills folder (repeatable; `skillctl agents` lists them). Default: "
                 "skills.yaml's targets:, else .agents/skills."),
    click.option("--user", is_flag=True, help="Use the agents' user folders (e.g. ~/.claude/skills) instead of the project's."),
    click.option("--link", is_flag=True, help="Keep one copy of each skill in .skillctl/store and link the agents' folders to it "
                 "(copies where links fail)."),
    click.option("--force", is_flag=True, help="Replace skill folders edited in place (they are reported and left alone otherwise)."),
]
_git_token_opt = click.option(
    "--git-token-stdin", "git_token_stdin", is_flag=True,
    help="Read a token for private git repositories from the first line of stdin; it is sent only to each repository's "
    "own origin. Env: SKILLCTL_GIT_TOKEN.")
_allow_unsigned_opt = click.option(
    "--allow-local-skills", "allow_unsigned", is_flag=True,
    help="Under a trust policy that requires signatures, accept git and folder skills, which cannot be signed "
    "(the audit threshold still applies to them).")


def _options(opts: list[Callable[..., Any]]) -> Callable[..., Any]:
    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for opt in reversed(opts):
            f = opt(f)
        return f

    return decorate


env_options = _options(_env_opts)
target_options = _options(_target_opts)


def _default_registry(registry_url: str | None) -> str | None:
    """``--registry`` or ``SKILLCTL_REGISTRY`` replace the project's default registry (the order
    npm and pip use: command line, then environment, then the project's file); without either,
    ``registries.default`` of skills.yaml, then the URL the lock recorded."""
    return registry_url


def workspace(req_path: Path, lock_path: Path, registry_url: str | None, *, git_token_stdin: bool = False,
              allow_unsigned: bool = False):
    from skillctl.project.workflow import Workspace

    access = given_access()
    options = {k: access[k] for k in ("insecure", "username", "password", "token") if access.get(k)}
    token = None
    if git_token_stdin:
        if access.get("password") or access.get("token"):
            raise click.UsageError("--git-token-stdin and --password-stdin/--token-stdin all read standard input; "
                                   "give the git token in SKILLCTL_GIT_TOKEN instead")
        token = sys.stdin.readline().strip()
        if not token:
            raise click.UsageError("--git-token-stdin: the first line of standard input is empty; pipe the token to it")
    token = token or os.environ.get("SKILLCTL_GIT_TOKEN") or None

    def opener(url: str):
        # A URL from --registry or SKILLCTL_REGISTRY is named as such when it is not there; one from
        # skills.yaml or the lock says where to put the team's registry instead.
        from skillctl.registry import default_registry_url

        ours = url == (registry_url or default_registry_url())
        origin = registry_origin() if ours else (
            f"{req_path} or {lock_path}; name the team's registry in {req_path} (registries: {{default: URL}}) or pass --registry")
        return registry_opener(url, origin=origin, **options)()

    return Workspace(req_path, lock_path, registry_override=_default_registry(registry_url), registry_opener=opener,
                     insecure=bool(access.get("insecure")), git_token=token, allow_unsigned=allow_unsigned, progress=progress)


def _env(index, extra_index, allow_sdist, image, ignore_requires_python=()):
    from skillctl.env.resolve import indexes
    from skillctl.project.workflow import EnvOptions

    return EnvOptions(indexes(index, extra_index) if extra_index else index, allow_sdist, image,
                      tuple(ignore_requires_python))


def _print_moves(moves, *, upgraded: bool = False) -> None:
    for move in moves:
        click.echo(move.line())


def _shown(item: dict[str, str]) -> str:
    return f"{item['path']} ({item['version']})" if item.get("version") else item["path"]


def _report_sync(report, fmt: str, extra: dict[str, Any] | None = None) -> None:
    if fmt == "json":
        emit_json({**(extra or {}), **report.to_dict()})
        return
    for item in report.edited:
        click.echo(f"edited in place, left alone: {item['path']} (--force replaces it)", err=True)
    for item in report.foreign:
        click.echo(f"not installed by skillctl, left alone: {item['path']}", err=True)
    prefix = "would " if report.dry_run else ""
    for item in report.written:
        click.echo(f"{prefix}install {_shown(item)}")
    for item in report.removed:
        click.echo(f"{prefix}remove {_shown(item)}")
    click.echo(report.summary())


# ---------------------------------------------------------------------------- lock


@click.command("lock")
@_req_opt
@_lock_opt
@click.option("--upgrade", is_flag=True, help="Move every pin to the newest its entry allows (default: keep the pins skills.yaml still allows).")
@_allow_unsigned_opt
@_git_token_opt
@env_options
@registry_option
@format_option
@library_errors
def lock_cmd(req_path: Path, lock_path: Path, upgrade: bool, allow_unsigned: bool, git_token_stdin: bool, index, extra_index, allow_sdist,
             image, ignore_requires_python, registry_url: str | None, fmt: str) -> None:
    """Resolve skills.yaml's entries to exact versions and digests in skills.lock.

    Pins that skills.yaml still allows are kept: locking an unchanged project changes nothing,
    and each pin that moves is printed as `NAME OLD -> NEW`. --upgrade moves every pin to the
    newest its entry allows (`skillctl update NAME` moves one).

    When the skills (PEP 723 blocks, requirements.txt) or skills.yaml's `environment:` declare
    packages, the environment is resolved too: pylock.skills.toml beside the lock (pinned there
    by digest) and the Debian packages with their sha256 in the lock's `environment` section.
    """
    with workspace(req_path, lock_path, registry_url, git_token_stdin=git_token_stdin, allow_unsigned=allow_unsigned) as ws:
        lock, moves = ws.lock(upgrade=upgrade, env=_env(index, extra_index, allow_sdist, image, ignore_requires_python))
    if fmt == "json":
        emit_json({"lock": str(lock_path), "moves": [m.to_dict() for m in moves],
                   "skills": [{"name": s.name, **s.to_dict()} for s in sorted(lock.skills, key=lambda s: s.name)],
                   "environment": lock.environment})
        return
    _print_moves(moves)
    env = " with its environment" if lock.environment else ""
    changed = f", {len(moves)} changed" if moves else ", nothing changed"
    click.echo(f"wrote {lock_path} ({count(len(lock.skills), 'skill')}{env}{changed})")


# ---------------------------------------------------------------------------- install / sync


@click.command("install")
@_req_opt
@_lock_opt
@output_option("out_dir", old=("--out",), help="Install into this one folder (DIR/NAME/) instead of the agents' folders.")
@click.option("--frozen", is_flag=True, help="Install exactly what skills.lock says; fail if it is missing or stale.")
@target_options
@_allow_unsigned_opt
@_git_token_opt
@env_options
@registry_option
@format_option
@library_errors
def install_cmd(req_path: Path, lock_path: Path, out_dir: Path | None, frozen: bool, agents, user: bool, link: bool, force: bool,
                allow_unsigned: bool, git_token_stdin: bool, index, extra_index, allow_sdist, image, ignore_requires_python, registry_url: str | None, fmt: str) -> None:
    """Install the locked skills into the agents' folders, verifying every digest.

    Without --frozen a missing or stale lock is (re)created first. With --frozen the lock must
    exist and match skills.yaml (when present); nothing is re-resolved. Skills go into the
    folders of the agents skills.yaml's `targets:` (or --agent) name, else .agents/skills; each
    folder skillctl writes carries a marker, and folders it did not write are never touched.
    `skillctl sync` also removes the skills the lock no longer names.

    Under a trust policy (skills.yaml `trust:`), every version must still be signed by the key
    the lock recorded and pass the audit threshold; one refused version installs nothing. A
    locked environment's files are downloaded (or re-hashed) too, each against its sha256.
    """
    with workspace(req_path, lock_path, registry_url, git_token_stdin=git_token_stdin, allow_unsigned=allow_unsigned) as ws:
        lock = ws.frozen() if frozen else ws.current(env=_env(index, extra_index, allow_sdist, image, ignore_requires_python))[0]
        targets = ws.target_folders(agents, user=user, out=out_dir)
        report = ws.sync(lock, targets, remove=False, force=force, link=link)
    if fmt == "json":
        # One entry per locked skill and folder: name, version, digest, path, and what was done.
        digests = {s.name: s.digest for s in lock.skills}
        emit_json([{**item, "digest": digests.get(item["name"], "")} for item in report.per_skill()])
        return
    _report_sync(report, fmt)


@click.command("sync")
@_req_opt
@_lock_opt
@click.option("--dry-run", is_flag=True, help="Show what would be written and removed; change nothing.")
@target_options
@_allow_unsigned_opt
@_git_token_opt
@registry_option
@format_option
@library_errors
def sync_cmd(req_path: Path, lock_path: Path, dry_run: bool, agents, user: bool, link: bool, force: bool, allow_unsigned: bool,
             git_token_stdin: bool, registry_url: str | None, fmt: str) -> None:
    """Make every target folder hold exactly what skills.lock says.

    `install --frozen`, plus removing the skills the lock no longer names — only folders
    skillctl installed (they carry its marker); a folder edited in place is reported and left
    alone unless --force. The lock must exist and match skills.yaml: run `skillctl lock` after
    editing it. --dry-run shows what would be written and removed.
    """
    with workspace(req_path, lock_path, registry_url, git_token_stdin=git_token_stdin, allow_unsigned=allow_unsigned) as ws:
        lock = ws.frozen()
        targets = ws.target_folders(agents, user=user)
        report = ws.sync(lock, targets, remove=True, force=force, link=link, dry_run=dry_run)
    _report_sync(report, fmt, {"lock": str(lock_path), "targets": [str(t.path) for t in targets]})


# ---------------------------------------------------------------------------- add / remove


@click.command("add")
@click.argument("source")
@click.option("--skill", "skills", multiple=True, metavar="NAME",
              help="The skill to take from a source that holds several (a repository, a site, a folder). Repeatable.")
@click.option("--all", "take_all", is_flag=True, help="Take every skill the source holds.")
@click.option("--no-sync", is_flag=True, help="Only edit skills.yaml and skills.lock; install nothing.")
@_req_opt
@_lock_opt
@target_options
@_allow_unsigned_opt
@_git_token_opt
@registry_option
@format_option
@library_errors
def add_cmd(source: str, skills, take_all: bool, no_sync: bool, req_path: Path, lock_path: Path, agents, user: bool, link: bool,
            force: bool, allow_unsigned: bool, git_token_stdin: bool, registry_url: str | None, fmt: str) -> None:
    """Add SOURCE's skills to skills.yaml, lock them and install them.

    SOURCE is a registry reference (`tally`, `tally@^1.2`, from --registry or the project's default
    registry), a git repository (`github:OWNER/REPO[/PATH][@REF]`, `gitlab:…`,
    `git+https://HOST/REPO[@REF][#path=SUBDIR]`, `git+ssh://…`, `git+file://…`), a skills site
    (`https://HOST`) or a folder (`./skills/mine`). A source holding several skills needs --skill
    NAME or --all. Comments and order in skills.yaml are kept; --agent names are added to its
    `targets:`. Nothing is changed if any step fails.
    """
    from skillctl.project.adding import add_to_project

    with workspace(req_path, lock_path, registry_url, git_token_stdin=git_token_stdin, allow_unsigned=allow_unsigned) as ws:
        result = add_to_project(ws, source, skills=list(skills), take_all=take_all, agents=list(agents))
        report = None
        if not no_sync:
            targets = ws.target_folders(agents, user=user)
            report = ws.sync(result.lock, targets, remove=False, force=force, link=link)
    if fmt == "json":
        emit_json({"added": result.added, "moves": [m.to_dict() for m in result.moves],
                   **({"install": report.to_dict()} if report is not None else {})})
        return
    for name, written in result.added.items():
        click.echo(f"added {name}: {written}")
    _print_moves([m for m in result.moves if m.old is not None])
    if report is not None:
        _report_sync(report, fmt)


@click.command("remove")
@click.argument("names", nargs=-1, required=True)
@click.option("--no-sync", is_flag=True, help="Only edit skills.yaml and skills.lock; leave the installed folders.")
@_req_opt
@_lock_opt
@target_options
@registry_option
@format_option
@library_errors
def remove_cmd(names, no_sync: bool, req_path: Path, lock_path: Path, agents, user: bool, link: bool, force: bool,
               registry_url: str | None, fmt: str) -> None:
    """Remove skills NAME… from skills.yaml, skills.lock and every target folder.

    Only folders skillctl installed (they carry its marker) are deleted; one edited in place is
    reported and kept unless --force. To delete a published version from a registry, use
    `skillctl registry remove NAME@VERSION`.
    """
    from skillctl.project.adding import remove_from_project
    from skillctl.project.sync import remove_from_targets

    bad = [n for n in names if "@" in n]
    if bad:
        raise click.UsageError(f"{bad[0]}: skillctl remove takes the names of this project's skills; to delete a published "
                               f"version from a registry use: skillctl registry remove {bad[0]}")
    with workspace(req_path, lock_path, registry_url) as ws:
        targets = ws.target_folders(agents, user=user)  # before the entries (and maybe targets:) change
        lock, moves = remove_from_project(ws, list(names))
        report = remove_from_targets(targets, list(names), force=force, progress=progress) if not no_sync else None
    if fmt == "json":
        emit_json({"removed": list(names), "moves": [m.to_dict() for m in moves],
                   **({"folders": report.to_dict()} if report is not None else {})})
        return
    for name in names:
        click.echo(f"removed {name} from {req_path} and {lock_path}")
    if report is not None:
        _report_sync(report, fmt)


# ---------------------------------------------------------------------------- update / outdated


@click.command("update")
@click.argument("names", nargs=-1)
@click.option("--no-sync", is_flag=True, help="Only update skills.lock; install nothing.")
@_req_opt
@_lock_opt
@target_options
@_allow_unsigned_opt
@_git_token_opt
@env_options
@registry_option
@format_option
@library_errors
def update_cmd(names, no_sync: bool, req_path: Path, lock_path: Path, agents, user: bool, link: bool, force: bool,
               allow_unsigned: bool, git_token_stdin: bool, index, extra_index, allow_sdist, image, ignore_requires_python, registry_url: str | None, fmt: str) -> None:
    """Move the pins of NAME… (default: every skill) to the newest their entries allow, and install.

    A range moves to its newest version (`tally 1.0.0 -> 1.1.0`); a git entry to the commit its
    ref names now (a branch's new head); a folder to its files now. skills.yaml is not changed:
    widen a range there to go further (`skillctl outdated` shows what is newer).
    """
    with workspace(req_path, lock_path, registry_url, git_token_stdin=git_token_stdin, allow_unsigned=allow_unsigned) as ws:
        lock, moves = ws.lock(upgrade=set(names) if names else True, env=_env(index, extra_index, allow_sdist, image, ignore_requires_python))
        report = None
        if not no_sync:
            report = ws.sync(lock, ws.target_folders(agents, user=user), remove=False, force=force, link=link)
    if fmt == "json":
        emit_json({"moves": [m.to_dict() for m in moves], **({"install": report.to_dict()} if report is not None else {})})
        return
    _print_moves(moves)
    if not moves:
        click.echo("everything is at the newest its entry allows")
    if report is not None:
        _report_sync(report, fmt)


@click.command("outdated")
@_req_opt
@_lock_opt
@_git_token_opt
@registry_option
@format_option
@library_errors
def outdated_cmd(req_path: Path, lock_path: Path, git_token_stdin: bool, registry_url: str | None, fmt: str) -> None:
    """Show, per skill, the locked version, the newest its entry allows and the newest there is.

    Wanted is what `skillctl update NAME` would lock (the newest in the range, the commit the git
    ref names now); latest is the newest regardless (the registry's latest release, the git
    remote's default branch). Exit 0 whether or not something is outdated; nothing is written.
    """
    from skillctl.project.outdated import outdated

    with workspace(req_path, lock_path, registry_url, git_token_stdin=git_token_stdin) as ws:
        previous = ws.previous()
        if previous is None:
            raise click.ClickException(f"{lock_path} not found; run skillctl lock first")
        rows = outdated(ws.project, previous, ws.sources, registry_override=ws.registry_override, insecure=ws.insecure)
    if fmt == "json":
        emit_json([r.to_dict() for r in rows])
        return
    if not rows:
        click.echo("no skills declared")
        return
    header = ("name", "current", "wanted", "latest", "source")
    table = [header] + [(r.name + (" *" if r.outdated else ""), r.current, r.wanted, r.latest, r.problem or r.source) for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header) - 1)]
    for row in table:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + str(row[-1]))
    if any(r.outdated for r in rows):
        click.echo("* outdated: skillctl update NAME moves to wanted; widen the range in skills.yaml for latest")
