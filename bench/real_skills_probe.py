"""Real skills' scripts: do they start in the environment skillctl gives them?

For every skill folder under each ROOT (a folder holding ``*/SKILL.md``, searched two levels
deep), the skill's declarations (PEP 723, requirements.txt) plus what ``skillctl env infer``
adds are resolved together, per ROOT, for the agent image, the environment image is built, and
every Python script under a skill's ``scripts/`` is started as ``python3 SCRIPT --help`` in one
container of that image with the network off. The same scripts are also started in the plain
agent image, the baseline. Each script ends as:

    started   exit 0, or argparse/click usage (exit 2 with "usage:")
    missing   ModuleNotFoundError / ImportError: the module is named
    other     any other failure (needs arguments, a file, a display…), first line kept

Needs the package index (PyPI by default: ``--index-url``) and Docker; downloads what the
environments need (large for scientific skills: ``--skip`` what you cannot afford).

    python bench/real_skills_probe.py ../shared/real-skills/* [--skip NAME] [--allow-sdist] [--isolate-auto]
        [--format json]

Last lines: ``ROOT: plain started=A missing=B other=C | env started=D missing=E other=F``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

_MISSING_RE = re.compile(r"(?:ModuleNotFoundError|ImportError): (?:No module named '([^']+)'|cannot import name '([^']+)'.*)")
# Scripts get one shell loop: each runs with a timeout, its exit code and last lines marked.
_LOOP = r"""
for f in "$@"; do
  out=$(cd "$(dirname "$f")" && timeout 30 python3 "$f" --help </dev/null 2>&1); rc=$?
  printf '@@@ %s %s\n%s\n' "$rc" "$f" "$(printf '%s' "$out" | tail -n 12)"
done
"""


def skills_under(root: Path) -> list[Path]:
    return sorted({p.parent for p in root.glob("*/SKILL.md")} | {p.parent for p in root.glob("*/*/SKILL.md")})


def scripts_of(skill: Path) -> list[str]:
    return sorted(str(p.relative_to(skill)) for p in (skill / "scripts").rglob("*.py")
                  if p.is_file() and "__pycache__" not in p.parts and p.name != "__init__.py") if (skill / "scripts").is_dir() else []


def declarations(skills: list[Path], say):
    """The union of what each skill declares plus what inference adds for it."""
    from skillctl.bundle import collect_files
    from skillctl.env.declare import Declarations, Declared, skill_declarations
    from skillctl.env.imports import folder_reader, infer

    total = Declarations()
    for skill in skills:
        try:
            files = [f.path for f in collect_files(skill)]
            decl = skill_declarations(skill.name, files, folder_reader(skill))
            inferred = infer(skill, skill.name, files)
        except Exception as exc:  # noqa: BLE001 - a probe reports, it does not stop
            say(f"  {skill.name}: declarations unreadable: {exc}")
            continue
        extra = tuple(Declared(r, skill.name, "inferred") for r in inferred.missing)
        total = total + decl + Declarations(extra)
    return total


def resolvable(decl, target, index, say, **options):
    """``decl`` without the owners whose requirements cannot be resolved (each named once)."""
    from skillctl.env.resolve import resolve
    from skillctl.errors import EnvError

    everyone = decl.owners()  # the probe asks whether scripts start: a requires-python bound is not held
    try:
        resolve(decl, target, index=index, ignore_requires_python=everyone, **options)
        return decl, []
    except EnvError as exc:
        say(f"  the union does not resolve: {str(exc)[:300]}")
    bad = []
    for owner in decl.owners():
        try:
            resolve(decl.for_owners([owner]), target, index=index, ignore_requires_python=everyone, **options)
        except EnvError as exc:
            bad.append((owner, str(exc)))
            say(f"  {owner}: left out, {str(exc)[:200]}")
    kept = decl.for_owners([o for o in decl.owners() if o not in {b for b, _ in bad}])
    return kept, bad


def start_scripts(client, image: str, skills: list[Path]) -> dict[str, tuple[str, str]]:
    """{skill/script: (outcome, detail)} for every script, run in one container of ``image``."""
    buf = io.BytesIO()
    paths = []
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for skill in skills:
            scripts = scripts_of(skill)
            if not scripts:
                continue
            tar.add(skill, arcname=f"skills/{skill.name}", filter=lambda m: m if "/.git" not in m.name else None)
            paths += [f"/skills/{skill.name}/{s}" for s in scripts]
    if not paths:
        return {}
    container = client.containers.create(image, entrypoint=["/bin/sh", "-c", _LOOP, "probe"], command=paths,
                                         network_mode="none", cap_drop=["ALL"], security_opt=["no-new-privileges"],
                                         mem_limit="2g", working_dir="/tmp")
    try:
        container.put_archive("/", _under(buf.getvalue()))
        container.start()
        container.wait(timeout=3600)
        text = container.logs().decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    results: dict[str, tuple[str, str]] = {}
    for chunk in text.split("@@@ ")[1:]:
        head, _, body = chunk.partition("\n")
        rc, _, path = head.partition(" ")
        key = path.removeprefix("/skills/")
        miss = _MISSING_RE.search(body)
        if rc == "0" or (rc == "2" and "usage:" in body.lower()):
            results[key] = ("started", "")
        elif miss:
            results[key] = ("missing", miss.group(1) or miss.group(2))
        else:
            last = [ln for ln in body.strip().splitlines() if ln.strip()]
            results[key] = ("other", f"rc={rc} {last[-1][:160] if last else ''}")
    return results


def _under(data: bytes) -> bytes:
    """The tar ``data`` (``skills/NAME/…``, where the sandbox puts skills) readable by the
    image's user, owned by root."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data)) as src, tarfile.open(fileobj=out, mode="w") as dst:
        top = tarfile.TarInfo("skills")
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        dst.addfile(top)
        for member in src.getmembers():
            member.uid = member.gid = 0
            member.mode |= 0o444 if not member.isdir() else 0o555
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return out.getvalue()


def counts(results: dict[str, tuple[str, str]]) -> dict[str, int]:
    out = {"started": 0, "missing": 0, "other": 0}
    for outcome, _ in results.values():
        out[outcome] += 1
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--skip", action="append", default=[], metavar="SKILL", help="Leave this skill out (repeatable).")
    parser.add_argument("--only", action="append", default=[], metavar="SKILL", help="Probe only these skills (repeatable).")
    parser.add_argument("--index-url", default=None)
    parser.add_argument("--allow-sdist", action="store_true", help="Build packages that publish no wheel (in containers).")
    parser.add_argument("--isolate-auto", action="store_true",
                        help="Give every skill the merge holds back a venv of its own (environment: isolate: auto).")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args()

    from skillctl.env.declare import Isolation
    from skillctl.env.prepare import build_environment, resolve_environment
    from skillctl.env.resolve import index_url
    from skillctl.env.target import probe_image
    from skillctl.sandbox.client import docker_client
    from skillctl.sandbox.image import ensure_image

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    client = docker_client(timeout_s=3600)
    base = ensure_image(progress=say)
    target = probe_image(client, base)
    report = []
    for root in [r for r in args.roots if r.is_dir()]:
        skills = [s for s in skills_under(root) if s.name not in args.skip and (not args.only or s.name in args.only)]
        skills = [s for s in skills if scripts_of(s)]
        say(f"{root}: {len(skills)} skill(s) with scripts, {sum(len(scripts_of(s)) for s in skills)} script(s)")
        started = time.monotonic()
        decl = declarations(skills, say)
        options = {}
        if args.allow_sdist:
            from skillctl.env.sdist import SdistBuilder

            options = {"allow_sdist": True, "builder": SdistBuilder(client, base, target, index_url(args.index_url), progress=say)}
        decl, left_out = resolvable(decl, target, args.index_url, say, **options)
        env = resolve_environment(decl, target, index=args.index_url, base_image=base, client=client,
                                  allow_sdist=args.allow_sdist, ignore_requires_python=decl.owners(), progress=say,
                                  isolation=Isolation(auto=args.isolate_auto))
        image = build_environment(env, client, base, progress=say)
        prepared_s = time.monotonic() - started
        plain = start_scripts(client, base, skills)
        inside = start_scripts(client, image, skills)
        entry = {
            "root": str(root), "skills": len(skills), "scripts": len(inside), "image": image,
            "packages": len(env.python.files), "prepare_s": round(prepared_s, 1),
            "left_out": [{"skill": o, "why": w[:400]} for o, w in left_out],
            "plain": counts(plain), "env": counts(inside),
            "env_missing": sorted(f"{k}: {v[1]}" for k, v in inside.items() if v[0] == "missing"),
            "env_other": sorted(f"{k}: {v[1]}" for k, v in inside.items() if v[0] == "other"),
        }
        report.append(entry)
        if args.format == "text":
            for line in entry["env_missing"]:
                print(f"  missing  {line}")
            for line in entry["env_other"]:
                print(f"  other    {line}")
            p, e = entry["plain"], entry["env"]
            print(f"{root}: plain started={p['started']} missing={p['missing']} other={p['other']} | "
                  f"env started={e['started']} missing={e['missing']} other={e['other']} "
                  f"({entry['packages']} packages, {image}, prepared in {prepared_s:.0f} s)")
    if args.format == "json":
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
