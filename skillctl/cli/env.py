"""``skillctl env``: skill environments — show, build, list, prune, infer."""

from __future__ import annotations

import os
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, progress, registry_option
from skillctl.words import count

index_option = click.option(
    "--index-url", "index", envvar="SKILLCTL_INDEX_URL", metavar="URL",
    help="Package index (PEP 503 simple API) to resolve from. Env: SKILLCTL_INDEX_URL; "
    "else UV_INDEX_URL or PIP_INDEX_URL; else PyPI.",
)
extra_index_option = click.option(
    "--extra-index-url", "extra_index", multiple=True, envvar="SKILLCTL_EXTRA_INDEX_URL", metavar="URL",
    help="Another package index; repeatable. As uv does, extra indexes are searched before --index-url and a "
    "package comes from the first index that has it; skills.yaml environment.indexes can pin packages to one "
    "index. Credentials (https://user:token@host/…) are never printed nor locked. Env: SKILLCTL_EXTRA_INDEX_URL "
    "(space-separated).",
)
sdist_option = click.option(
    "--allow-sdist", is_flag=True,
    help="Accept source distributions where no wheel fits; they are built into wheels in a throwaway, "
    "network-less container. Default: wheels only (building runs the package's code).",
)
image_option = click.option("--image", metavar="IMAGE", help="Agent image to build on (default: the one `skillctl image build` makes).")
isolate_option = click.option(
    "--isolate-env", "isolate", multiple=True, metavar="SKILL",
    help="Give SKILL a venv of its own (/opt/skill-envs/SKILL), resolved alone, instead of the merged one; "
    "repeatable. skills.yaml (--requirements): environment: isolate: [SKILL] or auto.",
)
ignore_python_option = click.option(
    "--ignore-requires-python", "ignore_requires_python", multiple=True, metavar="SKILL",
    help="Do not hold SKILL's requires-python against the agent image's Python (its scripts run there all the same). "
    "Repeatable; skills.yaml's environment.ignore-requires-python adds to it.",
)


def _base_image(image: str | None) -> str:
    from skillctl.sandbox.image import ensure_image

    return image or ensure_image(progress=progress)


def _isolation(req_path: Path | None, isolate: tuple[str, ...]):
    """Which skills get a venv of their own: skills.yaml's environment.isolate plus --isolate-env."""
    from skillctl.env.declare import Isolation, project_isolation
    from skillctl.project.spec import load_project

    named = Isolation(required=isolate)
    return named if req_path is None else project_isolation(load_project(req_path).environment, str(req_path)) + named


def _declarations(refs: tuple[str, ...], registry_url: str | None, req_path: Path | None, imports: list | None = None):
    """Declarations of REFs — skill folders (for authors) or registry references — plus the
    project's skills.yaml environment when given; ``imports`` (a list) gets each skill's
    third-party imports as (skill, Choice)."""
    from skillctl.env.declare import Declarations, project_declarations, skill_declarations
    from skillctl.env.imports import folder_reader
    from skillctl.env.prepare import declarations_of, skill_imports
    from skillctl.project.spec import load_project

    decl = Declarations()
    refs_in_registry = []
    for ref in refs:
        folder = Path(ref)
        if (folder / "SKILL.md").is_file():
            from skillctl.bundle import collect_files

            files = [f.path for f in collect_files(folder)]
            owner = folder.resolve().name
            declared = skill_declarations(owner, files, folder_reader(folder))
            decl = decl + declared
            if imports is not None:
                imports += skill_imports(owner, files, folder_reader(folder), declared)
        else:
            refs_in_registry.append(ref)
    if refs_in_registry:
        reg = open_registry_for_cli(registry_url)
        decl = decl + declarations_of([reg.resolve(r) for r in refs_in_registry], reg, imports=imports)
    if req_path is not None:  # the project's declarations merge last
        decl = decl + project_declarations(load_project(req_path).environment, str(req_path))
    return decl


def _no_isolate_with_lock(lock_path: Path | None, isolate: tuple[str, ...]) -> None:
    if lock_path is not None and isolate:
        raise click.UsageError("--isolate-env resolves anew, and --lock resolves nothing: the lock decides (add the "
                               "skill to skills.yaml environment: isolate, then run skillctl lock)")


def _ignored(names: tuple[str, ...], req_path: Path | None) -> tuple[str, ...]:
    """--ignore-requires-python's skills plus skills.yaml's environment.ignore-requires-python."""
    if req_path is None:
        return tuple(names)
    from skillctl.env.declare import ignored_requires_python
    from skillctl.project.spec import load_project

    return tuple(names) + ignored_requires_python(load_project(req_path).environment, str(req_path))


def _locked(lock_path: Path):
    from skillctl.env.prepare import locked_environment
    from skillctl.errors import EnvError
    from skillctl.project.lock import read_lock

    env = locked_environment(read_lock(lock_path).environment, lock_path)
    if env is None:
        raise EnvError(f"{lock_path} has no environment section: nothing its skills or skills.yaml declare needs one")
    return env


@click.group("env")
def env_group() -> None:
    """Skill environments: the packages skills' scripts import, in an image layer.

    Requirements come from PEP 723 blocks in a skill's scripts, its requirements.txt files and
    the project's skills.yaml (`environment: {python: [...], debian: [...]}`). They are resolved
    on this machine for the agent image's Python (wheels only by default), every file is pinned
    by sha256, and an image with a venv at /opt/skills-env (first on PATH) is built from them
    with no network. `skillctl run --skill …` does all of this by itself.
    """


_req_option = click.option("--requirements", "req_path", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                           help="Also use this skills.yaml's `environment:` section.")
_lock_option = click.option("--lock", "lock_path", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                            help="Use the environment pinned in this skills.lock (nothing is re-resolved).")


def resolving_command(extra: click.Option):
    """Arguments and options shared by the commands that resolve an environment."""
    def wrap(f):
        for decorate in reversed([click.argument("refs", nargs=-1), _req_option, _lock_option, extra, index_option,
                                  extra_index_option, sdist_option, isolate_option, image_option, ignore_python_option,
                                  registry_option, format_option, library_errors]):
            f = decorate(f)
        return f

    return wrap


@env_group.command("show", short_help="Show what skills declare and what that resolves to.")
@resolving_command(click.option("--no-resolve", is_flag=True, help="Only list what is declared (no index, no Docker)."))
def show(refs, req_path, lock_path, no_resolve, index, extra_index, allow_sdist, isolate, image, ignore_requires_python,
         registry_url, fmt) -> None:
    """What REFs (skill folders or registry references) declare, merged in order, and what it
    resolves to: exact versions with the sha256 of every file, each with the index it came from;
    the skills with a venv of their own and theirs; every package the merge holds below what a
    skill alone gets. Once resolved, every import of the skills' scripts is checked against what
    the resolved wheels provide (their file lists, read from the cache or by HTTP Range requests,
    else downloaded): each one that none provides is a located warning on stderr and in JSON's
    `checks` list ({owner, file, line, module, distribution, resolved, message}). JSON: {target,
    index_url, declared, python, debian} (plus extra_index_urls and indexes when more than one
    index is used; target and index_url are null with --no-resolve), isolated [{skill, venv,
    python}], downgrades [{skill, package, alone, merged, held_by}]."""
    from skillctl.env.prepare import check_environment, resolve_environment
    from skillctl.env.resolve import indexes
    from skillctl.env.target import probe_image
    from skillctl.sandbox.client import docker_client

    _no_isolate_with_lock(lock_path, isolate)
    imports: list = []
    if lock_path is not None:
        env = _locked(lock_path)
        decl, doc = env.declarations, env.to_dict()
        for d in env.downgrades:
            progress(f"warning: {d.message()}")
    else:
        decl = _declarations(refs, registry_url, req_path, imports)
        # The same keys whatever is declared: with --no-resolve the target is not asked (null).
        doc = {"target": None, "index_url": None, "declared": decl.to_dict(), "python": [], "debian": []}
        if not no_resolve:
            base = _base_image(image)
            client = docker_client()
            env = resolve_environment(decl, probe_image(client, base), index=indexes(index, extra_index), allow_sdist=allow_sdist,
                                      base_image=base, client=client,
                                      ignore_requires_python=_ignored(ignore_requires_python, req_path), progress=progress,
                                      isolation=_isolation(req_path, isolate))
            doc = env.to_dict() | {"system_libraries": _built_image_libraries(env, client, base)}
            doc["checks"] = [c.to_dict() for c in check_environment(env, imports, download=True, progress=progress)]
    if fmt == "json":
        emit_json(doc)
        return
    if decl.empty:
        click.echo("nothing declared: the agent image is used as it is")
    for d in decl.requires_python:
        click.echo(f"requires-python {d.requirement:<24} {d.owner}: {d.source}")
    for d in decl.python:
        click.echo(f"python  {d.requirement:<32} {d.owner}: {d.source}")
    for d in decl.debian:
        click.echo(f"debian  {d.requirement:<32} {d.owner}: {d.source}")
    if doc["target"] is not None and not decl.empty:
        target = doc["target"]
        click.echo(f"resolved for Python {target['python']} ({target['machine']}, {target['libc']}) from {doc['index_url']}:")
        for f in doc["python"]:
            click.echo(f"  {f['name']}=={f['version']}  {f['filename']}  sha256:{f['sha256']}")
        for d in doc["debian"]:
            click.echo(f"  {d['package']}={d['version']}  {d['filename']}  sha256:{d['sha256']}")
        for iso in doc["isolated"]:
            click.echo(f"{iso['skill']}: an environment of its own at {iso['venv']}:")
            for f in iso["python"]:
                click.echo(f"  {f['name']}=={f['version']}  {f['filename']}  sha256:{f['sha256']}")
        for d in doc["downgrades"]:
            held = f" (held back by {', '.join(d['held_by'])})" if d["held_by"] else ""
            click.echo(f"held back: skill {d['skill']}: {d['package']} {d['alone']} alone → {d['merged']} with the "
                       f"others{held}")
    if doc.get("system_libraries") is not None:
        _echo_libraries(doc["system_libraries"])
    elif "system_libraries" in doc:
        click.echo("system libraries: not checked yet (the environment image is not built; `skillctl env build`)")


def _built_image_libraries(env, client, base: str):
    """The system-library report of ``env``'s image when it is built (None when it is not)."""
    from skillctl.env.prepare import existing_environment_image
    from skillctl.env.syslibs import environment_check

    tag = existing_environment_image(env, client, base)
    if tag is None:
        return [] if env.empty else None
    found = environment_check(client, tag, env, progress=progress)
    return None if found is None else [m.to_dict() for m in found]


def _echo_libraries(found: list) -> None:
    from skillctl.env.syslibs import MissingLibrary, report_lines

    lines = report_lines([MissingLibrary.from_dict(d) for d in found])
    click.echo("system libraries: every one the wheels need is in the image" if not lines else "system libraries:")
    for line in lines:
        click.echo(f"  {line}")


@env_group.command("build", short_help="Build the environment image and print its tag.")
@resolving_command(click.option("--force", is_flag=True, help="Rebuild even when an image for this environment exists."))
def build(refs, req_path, lock_path, force, index, extra_index, allow_sdist, isolate, image, ignore_requires_python,
          registry_url, fmt) -> None:
    """Resolve, download (hash-checked) and build the environment image; print its tag."""
    from skillctl.env.prepare import build_environment, resolve_environment
    from skillctl.env.resolve import indexes
    from skillctl.env.target import probe_image
    from skillctl.errors import EnvError
    from skillctl.sandbox.client import docker_client

    _no_isolate_with_lock(lock_path, isolate)
    base = _base_image(image)
    client = docker_client()
    if lock_path is not None:
        env = _locked(lock_path)
        target = probe_image(client, base)
        if env.target != target:
            raise EnvError(f"{lock_path} was resolved for Python {env.target.python} on {env.target.uv_platform}, "
                           f"but {base} has Python {target.python} on {target.uv_platform}; run skillctl lock again")
        for d in env.downgrades:
            progress(f"warning: {d.message()}")
    else:
        decl = _declarations(refs, registry_url, req_path)
        env = resolve_environment(decl, probe_image(client, base), index=indexes(index, extra_index), allow_sdist=allow_sdist,
                                  base_image=base, client=client,
                                  ignore_requires_python=_ignored(ignore_requires_python, req_path), progress=progress,
                                  isolation=_isolation(req_path, isolate))
    tag = build_environment(env, client, base, progress=progress, force=force)
    if fmt == "json":
        from skillctl.env.syslibs import environment_check

        found = environment_check(client, tag, env) if tag != base else []  # checked by the build: cached
        emit_json({"image": tag, "base": base, **env.to_dict(),
                   "system_libraries": None if found is None else [m.to_dict() for m in found]})
    else:
        click.echo(tag)


@env_group.command("list", short_help="List the environment images skillctl built, newest first.")
@format_option
@library_errors
def list_cmd(fmt) -> None:
    """Environment images on this Docker Engine (only those skillctl built, found by their
    label org.skillctl.env), newest first. JSON: a list of {id, tags, env, base, packages,
    created, size}."""
    from skillctl.env.images import list_env_images
    from skillctl.sandbox.client import docker_client

    images = list_env_images(docker_client())
    if fmt == "json":
        emit_json([i.to_dict() for i in images])
        return
    if not images:
        click.echo("no environment images")
    for item in images:
        tags = ", ".join(item.tags) or "<untagged>"
        click.echo(f"{tags:<26} {item.size / 1e6:8.1f} MB  {item.created[:19]}  {' '.join(item.packages)}")


class Duration(click.ParamType):
    """``90s``, ``30m``, ``1h``, ``7d`` (or plain seconds) as seconds."""

    name = "duration"
    _UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        text = str(value).strip().lower()
        unit = self._UNITS.get(text[-1:], None)
        number = text[:-1] if unit else text
        try:
            seconds = float(number) * (unit or 1)
        except ValueError:
            self.fail(f"{value!r} is not a duration; write e.g. 90s, 30m, 1h, 7d or 0", param, ctx)
        if seconds < 0:
            self.fail(f"{value!r} is negative", param, ctx)
        return seconds


@env_group.command("prune", short_help="Remove the environment images no run uses.")
@click.option("--all", "everything", is_flag=True,
              help="Also remove images built on the current agent image (still never one in use).")
@click.option("--base", "bases", multiple=True, metavar="IMAGE",
              help="Only environment images built on this agent image; repeatable. Default: all of them.")
@click.option("--lock", "lock_paths", multiple=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Keep the image `skillctl run --lock FILE` would start; repeatable. Default: ./skills.lock "
              "when it exists.")
@click.option("--keep-within", default="1h", show_default=True, type=Duration(), metavar="DURATION",
              help="Keep images built less than this long ago (90s, 30m, 1h, 7d; 0 keeps none for being new).")
@click.option("--dry-run", is_flag=True, help="Only report what would be removed; change nothing.")
@image_option
@format_option
@library_errors
def prune(everything, bases, lock_paths, keep_within, dry_run, image, fmt) -> None:
    """Remove environment images that are not in use (found by their label org.skillctl.env;
    the agent image and every other image are never touched).

    In use, and kept: an image a container (running or stopped) was created from; the image a
    lock pins (--lock, else ./skills.lock); one built less than --keep-within ago (a run may be
    about to start it); and, without --all, one built on the current agent image (--image, else
    the one `skillctl image build` makes) — later runs may reuse it. Images built on any other
    agent image go. Parts (skillctl-env-part:…, what environment images are assembled from) go when
    no environment image that stays lists them and they are older than --keep-within. JSON:
    {dry_run, removed: [{id, tags, packages, reason}], kept: [...], parts: {removed: [...], kept: [...]}}.
    """
    from skillctl.env.images import apply_prune, image_id, locked_files, plan_part_prune, plan_prune
    from skillctl.project.lock import read_lock
    from skillctl.env.resolve import uv_binary, uv_version
    from skillctl.sandbox.client import docker_client

    client = docker_client()
    if image:
        current = image_id(client, image)
    else:
        from skillctl.sandbox.image import recipe

        try:
            current = client.images.get(recipe().tag).id
        except Exception:
            current = None  # no current agent image: every environment image is outdated
    paths = list(lock_paths) or [p for p in [Path("skills.lock")] if p.is_file()]
    plan = plan_prune(client, current_base=current, bases=[image_id(client, b) for b in bases],
                      locks=locked_files([(p, read_lock(p).environment) for p in paths]), keep_within_s=keep_within, everything=everything,
                      uv=uv_version(uv_binary()))
    done = plan if dry_run else apply_prune(client, plan)
    part_plan = plan_part_prune(client, done, bases=[image_id(client, b) for b in bases], keep_within_s=keep_within)
    parts = part_plan if dry_run else apply_prune(client, part_plan)
    removed = [d for d in done if d.remove]
    kept = [d for d in done if not d.remove]
    if fmt == "json":
        emit_json({"dry_run": dry_run, "removed": [d.to_dict() for d in removed], "kept": [d.to_dict() for d in kept],
                   "parts": {"removed": [d.to_dict() for d in parts if d.remove],
                             "kept": [d.to_dict() for d in parts if not d.remove]}})
        return
    verb = "would remove" if dry_run else "removed"
    for d in removed + [d for d in parts if d.remove]:
        click.echo(f"{verb} {', '.join(d.image.tags) or d.image.id[:19]}: {d.reason}")
    for d in kept + [d for d in parts if not d.remove]:
        click.echo(f"kept {', '.join(d.image.tags) or d.image.id[:19]}: {d.reason}")
    click.echo(f"{verb} {count(len(removed), 'environment image')}, kept {len(kept)}; parts: {verb} "
               f"{sum(d.remove for d in parts)}, kept {sum(not d.remove for d in parts)}")


@env_group.command("infer", short_help="Suggest the requirements a skill should declare.")
@click.argument("skill")
@click.option("--as", "style", type=click.Choice(["pep723", "requirements"]), default="pep723", show_default=True,
              help="Print a PEP 723 block to paste at the top of a script, or requirements.txt lines.")
@click.option("--check-libraries", is_flag=True,
              help="Also resolve the result (index and Docker, as `env show`), read the shared objects of its wheels "
              "and propose the Debian packages for the libraries the agent image lacks (JSON key `debian`). "
              "Index: SKILLCTL_INDEX_URL, UV_INDEX_URL, PIP_INDEX_URL, else PyPI.")
@registry_option
@format_option
@library_errors
def infer(skill, style, check_libraries, registry_url, fmt) -> None:
    """Suggest the declaration for SKILL (a folder, or a registry reference NAME[@RANGE]): what it
    declares plus what its scripts import that nothing declares (stdlib and the skill's own
    modules left out). Each import's distribution comes from a declaration, an install line of
    the skill's own text (`pip install fair-esm`), the import-name map, or — a guess, marked
    "unknown — check" — the import's own name. Imports under a platform check get its marker
    (`pywin32; sys_platform == "win32"`); those under an ImportError handler are optional and
    only noted, unless the skill's text asks to install them. Review the result: versions are
    for you to bound. JSON: {declared, missing, optional, unknown, imports: [{module, file,
    line, distribution, provenance, certain, why, optional, caught, marker, needed, evidence}],
    pep723, requirements} (and `debian` with --check-libraries)."""
    import tempfile

    from skillctl.bundle import collect_files
    from skillctl.env.imports import infer as infer_imports

    with tempfile.TemporaryDirectory(prefix="skillctl-infer-") as tmp:
        folder, shown = _skill_folder(skill, registry_url, Path(tmp))
        files = [f.path for f in collect_files(folder)]
        result = infer_imports(folder, Path(os.path.abspath(folder)).name, files)
        debian = _infer_debian(result.requirements(), Path(os.path.abspath(folder)).name) if check_libraries else None
        if fmt == "json":
            emit_json({**({"debian": debian} if debian is not None else {}),
                "declared": list(result.declared), "missing": list(result.missing),
                "optional": list(result.optional), "unknown": list(result.unknown),
                "imports": [c.to_dict() for c in result.choices],
                "pep723": result.pep723_block(), "requirements": result.requirements(),
            })
            return
        if style == "requirements":
            click.echo("\n".join(result.requirement_lines()))
        else:
            click.echo(result.pep723_block(), nl=False)
        for c in result.choices:
            u = c.use
            if c.provenance == "declared":
                continue
            guard = []
            if u.caught:
                guard.append("guarded by an ImportError handler")
            if u.marker:
                guard.append(f"only when {u.marker}")
            guarded = f" ({'; '.join(guard)})" if guard else ""
            target = c.distribution or "?"
            progress(f"{shown}/{u.file}:{u.line}: imports {u.module} -> {target}{guarded}: {c.why}")
        for dist in result.optional:
            where = ", ".join(f"{c.use.file}:{c.use.line}" for c in result.choices if c.distribution == dist)
            progress(f"optional: {dist} (imported under an ImportError guard at {where}), not added")
        if debian is not None:
            _say_debian(debian)


def _infer_debian(requirements: list[str], owner: str) -> dict:
    """``env infer --check-libraries``: the Debian packages the resolved wheels' libraries need;
    a resolution that fails is a note, not an error (the import proposal stands)."""
    from skillctl.env.syslibs import infer_debian
    from skillctl.errors import SkillctlError
    from skillctl.sandbox.client import docker_client

    try:
        base = _base_image(None)
        return infer_debian(requirements, owner, client=docker_client(), base_image=base, progress=progress)
    except SkillctlError as exc:  # no index, no Docker, nothing resolvable: the import proposal stands
        return {"packages": [], "system_libraries": None, "note": f"system libraries not checked: {exc}"}


def _say_debian(debian: dict) -> None:
    """On stderr (stdout is the block to paste): what is missing and the skills.yaml line."""
    from skillctl.env.syslibs import MissingLibrary, report_lines

    if debian["note"]:
        progress(debian["note"])
    found = [MissingLibrary.from_dict(d) for d in debian["system_libraries"] or []]
    for line in report_lines(found):
        progress(line)


def _skill_folder(skill: str, registry_url: str | None, scratch: Path) -> tuple[Path, str]:
    """(a folder holding SKILL's files, how to name it in messages): the folder itself, or a
    registry reference's version fetched, checked and written into ``scratch``."""
    folder = Path(skill)
    if folder.is_dir():
        return folder, skill
    if "/" in skill or skill.startswith("."):
        raise click.UsageError(f"{skill}: no such folder; give a skill folder or a registry reference (NAME[@RANGE])")
    from skillctl.bundle import read_artifact, write_contents

    reg = open_registry_for_cli(registry_url)
    with reg:
        rec = reg.resolve(skill)
        contents = read_artifact(reg.fetch(rec), rec.artifact_type, expected_name=rec.name, source=f"{rec.name}@{rec.version}")
    return write_contents(contents, scratch, durable=False), f"{rec.name}@{rec.version}"
