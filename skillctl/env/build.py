"""The environment image: a layer on the agent image with a venv and Debian packages.

Built with ``docker build --network none`` from contexts that hold only files already checked
on the host: the wheels (and .debs) from the verified cache, requirements files pinning each
wheel by sha256, and uv's binary (the same one that resolved; it installs, then is left behind in
a build stage). Nothing is downloaded during the build and nothing is pulled.

The wheels are split into parts that stay the same when the environment changes a little
(``partition``): a wheel of ``ALONE_ABOVE`` bytes or more is a part of its own (numpy, torch…),
the others go into ``BUCKETS`` parts by a hash of their distribution name. Each part is its own
image, ``skillctl-env-part:<hash12>`` (the hash covers the agent image id, the part's files'
sha256, the recipe and uv's version), built once and reused by every environment that has the
same part: an environment that differs by one small package reinstalls one bucket, not numpy.

    a part:         stage 1 (install), on the agent image, as an unprivileged user (65534)
                    owning only /opt/skills-env: uv makes the venv with the image's own python3
                    and installs the part's wheels --offline --no-index --require-hashes
                    --no-deps; then the image's python3 -I -S byte-compiles it (-S: no
                    site-packages, so no package's .pth runs); stage 2: FROM scratch, only that
                    /opt/skills-env (no uv, no wheels). Each part's venv is the same venv (same
                    path, same interpreter), so its scripts' shebangs already name
                    /opt/skills-env/bin/python and each .dist-info's RECORD is right once merged.
    the image:      the agent image + the .debs (dpkg -i) + each part's /opt/skills-env copied
                    over the one before (COPY --from, owned by root: the parts hold disjoint
                    packages); no script in its bin may have the name of a command of the image
                    (``shadow``: the build fails naming the wheel); then, as the agent image
                    does, no setuid/setgid file or folder anywhere (bits removed, and the build
                    fails if one is left); PATH starts with /opt/skills-env/bin; the user is the
                    agent image's again

A skill isolated from the merge (``environment: isolate``) gets a venv of its own at
/opt/skill-envs/<skill>, made exactly like stage 1 in a stage of its own (``iso<N>``) and
copied in beside /opt/skills-env, its bin checked by the same shadow check. Then
/opt/skillctl-env/bin — first on PATH — holds ``python3`` and ``python``: a launcher (``/bin/sh``)
that runs a script under /skills/<skill>/ of an isolated skill with that skill's venv (with no
script — ``-c``, ``-m``, stdin — the working folder decides), anything else with the shared one.

No wheel's code runs during the build, as root or at all: wheels are unpacked, not run. The only
package code that runs is Debian packages' maintainer scripts (as root, as dpkg runs them
anywhere), before the venv is copied in. A refused build leaves no layer behind, nor a part it
made.

The image is tagged ``skillctl-env:<hash12>`` where the hash covers the agent image id, every
file's sha256, the build recipe and uv's version; an image with that label is reused. It lists
its parts' hashes in a label, so ``env prune`` removes a part no environment image uses.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillctl.env import shadow
from skillctl.sandbox.client import list_images
from skillctl.errors import EnvError
from skillctl.sandbox.programs import PYTHON3

Progress = Callable[[str], None]

ENV_REPO = "skillctl-env"
VENV = "/opt/skills-env"
LABEL_ENV = "org.skillctl.env"  # the environment hash
LABEL_BASE = "org.skillctl.env.base"  # the agent image id it was built on
LABEL_PACKAGES = "org.skillctl.env.packages"  # "name==version …" for people
# On the build stage that holds uv and the wheels; it is removed after the build.
LABEL_STAGE = "org.skillctl.env.stage"
PART_REPO = "skillctl-env-part"
LABEL_PART = "org.skillctl.env.part"  # a part's hash, on the part image
LABEL_PARTS = "org.skillctl.env.parts"  # the parts' hashes (space-separated), on the environment image
# Bump when the Dockerfiles below change meaning, so old images are not reused for them.
RECIPE_VERSION = "4"
# Wheels this large are a part of their own; the others share BUCKETS parts by name.
ALONE_ABOVE = 5 * 1024 * 1024
BUCKETS = 4
# Who makes the venv in the build stage: a uid that owns nothing else in the image.
BUILD_USER = "65534:65534"

# How a venv is made in a build stage (a part's, an isolated skill's): by an unprivileged user
# owning only the venv, offline, every wheel pinned by hash, none of their code run.
_INSTALL = """\
RUN mkdir -p {venv} && chown {build_user} {venv}
USER {build_user}
# compileall exits 1 when a file does not compile (some wheels ship such files): not an error.
RUN /tmp/skillctl-build/uv venv --no-config --no-cache --color never --no-python-downloads --python {python3} {venv} \\
 && /tmp/skillctl-build/uv pip install --no-config --color never --offline --no-cache --no-index \\
      --find-links /tmp/skillctl-build/wheels --require-hashes --no-deps --only-binary :all: \\
      --link-mode copy --python {venv}/bin/python -r /tmp/skillctl-build/requirements.txt \\
 && {{ {python3} -I -S -m compileall -q -j 0 {venv}/lib || [ $? -eq 1 ]; }}
"""

_PART_DOCKERFILE = """\
ARG BASE
FROM ${{BASE}} AS install
ARG BASE
LABEL {stage_label}={digest} {base_label}=${{BASE}}
USER 0:0
COPY uv /tmp/skillctl-build/uv
COPY wheels/ /tmp/skillctl-build/wheels/
COPY requirements.txt /tmp/skillctl-build/requirements.txt
{install}
FROM scratch
COPY --from=install {venv} {venv}
"""

_DOCKERFILE = """\
ARG BASE
FROM ${{BASE}}
USER 0:0
{debs}{parts}{isolated}COPY shadow.py /tmp/skillctl-shadow.py
# No package script may stand in for a command of the image (see skillctl/env/shadow.py), and
# Debian packages bring setuid/setgid programs and setgid folders (/var/mail…): none may stay.
RUN {python3} -I -S /tmp/skillctl-shadow.py {venv} "$PATH" && rm /tmp/skillctl-shadow.py \\
 && find / -xdev -perm /6000 -exec chmod ug-s {{}} + \\
 && test -z "$(find / -xdev -perm /6000)"
ENV PATH={venv}/bin:${{PATH}} \\
    VIRTUAL_ENV={venv}
{launcher_path}USER {user}
"""

# One stage per isolated skill: the same rules as stage 1 (unprivileged, offline, hashes, no deps).
_ISOLATED_STAGE = """\
FROM ${{BASE}} AS iso{n}
LABEL {stage_label}={digest}
USER 0:0
COPY uv /tmp/skillctl-build/uv
COPY isolated/{n}/wheels/ /tmp/skillctl-build/wheels/
COPY isolated/{n}/requirements.txt /tmp/skillctl-build/requirements.txt
{install}
"""
_ISOLATED_COPY = "COPY --from=iso{n} --chown=0:0 {venv} {venv}\n"
_ISOLATED_FINAL = """\
COPY shadow.py /tmp/skillctl-shadow-isolated.py
COPY launcher {launcher_dir}/python3
RUN ln -s python3 {launcher_dir}/python{checks} \\
 && rm /tmp/skillctl-shadow-isolated.py
"""
_ISOLATED_CHECK = ' \\\n && {python3} -I -S /tmp/skillctl-shadow-isolated.py {venv} "$PATH"'

LAUNCHER_DIR = "/opt/skillctl-env/bin"
# Where the sandbox unpacks skills, as commands see it (DockerSandbox.skills_root).
SKILLS_ROOT = "/skills"
LAUNCHER_VERSION = "1"  # part of the environment hash when there is a launcher
_LAUNCHER = """\
#!/bin/sh
# python3/python of an environment with isolated skills, written by skillctl (skillctl/env/build.py).
# A script under the folder of a skill with an environment of its own runs with that skill's
# venv; with no script (-c, -m, -, none) the working folder decides; anything else runs with the
# shared venv {shared}.
script=
next=
for arg in "$@"; do
  if [ "$next" = value ]; then next=; continue; fi
  if [ "$next" = script ]; then script=$arg; break; fi
  case $arg in
    --) next=script ;;
    -|-c*|-m*) break ;;
    -W|-X) next=value ;;
    -*) ;;
    *) script=$arg; break ;;
  esac
done
if [ -n "$script" ]; then where=$(/usr/bin/realpath -m -- "$script"); else where=$(pwd -P)/; fi
case $where in
{cases}esac
exec {shared}/bin/python3 "$@"
"""


def launcher(isolated: Sequence[tuple[str, str]], shared: str = VENV, skills_root: str = SKILLS_ROOT) -> str:
    """The ``python3`` launcher for (skill, venv) pairs."""
    cases = "".join(f'  {skills_root}/{skill}/*) exec {venv}/bin/python3 "$@" ;;\n' for skill, venv in isolated)
    return _LAUNCHER.format(cases=cases, shared=shared)


@dataclass(frozen=True)
class IsolatedFiles:
    """The verified wheels of one isolated skill and the venv they go into."""

    skill: str
    venv: str
    wheels: Sequence["EnvFile"]


_DEBS = """\
COPY debs/ /tmp/skillctl-debs/
RUN dpkg -i /tmp/skillctl-debs/*.deb && rm -rf /tmp/skillctl-debs \\
 && rm -rf /var/cache/apt/archives/* /var/lib/apt/lists/*
"""


@dataclass(frozen=True)
class EnvFile:
    """A verified local file and the sha256 it was checked against."""

    path: Path
    sha256: str
    pin: str = ""  # "name==version" for wheels


def env_hash(base_id: str, wheels: Sequence[tuple[str, str]], debs: Sequence[tuple[str, str]], uv: str,
             isolated: Mapping[str, Sequence[tuple[str, str]]] | None = None) -> str:
    """The environment's identity from (file name, sha256) pairs: known from the resolution or
    the lock before any file is read, so a cached image is found without hashing anything.
    ``isolated``: skill -> its own venv's pairs (left out when there are none, so an environment
    without isolated skills keeps its hash)."""
    doc: dict[str, Any] = {
        "base": base_id,
        "wheels": sorted(f"{name} {sha}" for name, sha in wheels),
        "debs": sorted(f"{name} {sha}" for name, sha in debs),
        "recipe": RECIPE_VERSION,
        "uv": uv,
    }
    if isolated:
        doc["isolated"] = {skill: sorted(f"{name} {sha}" for name, sha in pairs) for skill, pairs in isolated.items()}
        doc["launcher"] = LAUNCHER_VERSION
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def find_env_image(client: Any, digest: str) -> Any | None:
    """The image built for ``digest``: its tag when that carries the label (one inspect), else
    the newest image with the label. The tag comes first because a listing filtered by label
    makes the engine read every image's config — ~30 ms on every cached start, beside ~2 ms for
    an inspect; a tag moved to another image, or an image whose tag was removed, still ends in
    the listing."""
    import docker.errors

    try:
        tagged = client.images.get(f"{ENV_REPO}:{digest[:12]}")
    except docker.errors.ImageNotFound:
        tagged = None
    if tagged is not None and ((tagged.attrs.get("Config") or {}).get("Labels") or {}).get(LABEL_ENV) == digest:
        return tagged
    images = list_images(client, {"label": f"{LABEL_ENV}={digest}"})
    return max(images, key=lambda i: i.attrs.get("Created", "")) if images else None


def partition(wheels: Sequence[EnvFile], *, buckets: int = BUCKETS, alone_above: float = ALONE_ABOVE) -> list[list[EnvFile]]:
    """The wheels in parts that stay the same when other packages come and go: a large wheel
    alone, the others by a hash of their distribution name (not of the version: an upgrade of
    one small package reinstalls its bucket only). Parts in a stable order, empty ones left out."""
    alone: list[list[EnvFile]] = []
    shared: list[list[EnvFile]] = [[] for _ in range(max(1, buckets))]
    for w in sorted(wheels, key=lambda w: w.pin):
        if w.path.stat().st_size >= alone_above:
            alone.append([w])
        else:
            name = w.pin.split("==")[0]
            shared[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(shared)].append(w)
    return alone + [b for b in shared if b]


def part_hash(base_id: str, wheels: Sequence[EnvFile], uv: str) -> str:
    doc = {"base": base_id, "wheels": sorted(f"{w.path.name} {w.sha256}" for w in wheels), "recipe": RECIPE_VERSION,
           "uv": uv, "part": True}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _wheels_folder(folder: Path, wheels: Sequence[EnvFile]) -> None:
    """``folder``/wheels/ and ``folder``/requirements.txt pinning each wheel by sha256."""
    (folder / "wheels").mkdir(parents=True)
    lines = []
    for w in wheels:
        shutil.copyfile(w.path, folder / "wheels" / w.path.name)
        lines.append(f"{w.pin} --hash=sha256:{w.sha256}")
    (folder / "requirements.txt").write_text("\n".join(sorted(lines)) + "\n", "utf-8")


def _install(venv: str) -> str:
    return _INSTALL.format(venv=venv, build_user=BUILD_USER, python3=PYTHON3)


def _part_context(tmp: Path, wheels: Sequence[EnvFile], uv_bin: str, digest: str) -> None:
    _wheels_folder(tmp, wheels)
    shutil.copyfile(uv_bin, tmp / "uv")
    (tmp / "uv").chmod(0o755)
    (tmp / "Dockerfile").write_text(_PART_DOCKERFILE.format(venv=VENV, stage_label=LABEL_STAGE, base_label=LABEL_BASE,
                                                            digest=digest, install=_install(VENV)), "utf-8")


def _isolated_parts(tmp: Path, isolated: Sequence[IsolatedFiles], digest: str) -> tuple[str, str, str]:
    """(stages, copies and checks in the final stage, its PATH line) for the isolated skills;
    their wheel folders and the launcher written into the context ``tmp``."""
    if not isolated:
        return "", "", ""
    stages, copies, checks = [], [], []
    for n, iso in enumerate(isolated):
        _wheels_folder(tmp / "isolated" / str(n), iso.wheels)
        stages.append(_ISOLATED_STAGE.format(n=n, stage_label=LABEL_STAGE, digest=digest, install=_install(iso.venv)))
        copies.append(_ISOLATED_COPY.format(n=n, venv=iso.venv))
        checks.append(_ISOLATED_CHECK.format(python3=PYTHON3, venv=iso.venv))
    (tmp / "launcher").write_text(launcher([(i.skill, i.venv) for i in isolated]), "utf-8")
    (tmp / "launcher").chmod(0o755)
    final = "".join(copies) + _ISOLATED_FINAL.format(launcher_dir=LAUNCHER_DIR, checks="".join(checks))
    return "".join(stages), final, f"ENV PATH={LAUNCHER_DIR}:${{PATH}}\n"


def _context(tmp: Path, parts: Sequence[str], debs: Sequence[EnvFile], user: str, *, uv_bin: str = "", digest: str = "",
             isolated: Sequence[IsolatedFiles] = ()) -> None:
    """The final build's context: the shared venv from its parts' images, the .debs, and the
    isolated skills' stages (their wheels and uv, which the stages install with)."""
    shutil.copyfile(shadow.__file__, tmp / "shadow.py")
    debs_part = ""
    if debs:
        (tmp / "debs").mkdir()
        for d in debs:
            shutil.copyfile(d.path, tmp / "debs" / d.path.name)
        debs_part = _DEBS.format()
    if isolated:
        shutil.copyfile(uv_bin, tmp / "uv")
        (tmp / "uv").chmod(0o755)
    stages, final, launcher_path = _isolated_parts(tmp, isolated, digest)
    copies = "".join(f"COPY --from={PART_REPO}:{h[:12]} --chown=0:0 {VENV} {VENV}\n" for h in parts)
    dockerfile = _DOCKERFILE.format(venv=VENV, debs=debs_part, parts=copies, user=user, python3=PYTHON3, isolated=final,
                                    launcher_path=launcher_path)
    if stages:  # the isolated skills' stages go before the final one
        at = dockerfile.index("\nFROM ${BASE}\n") + 1
        dockerfile = dockerfile[:at] + stages + dockerfile[at:]
    (tmp / "Dockerfile").write_text(dockerfile, "utf-8")


def agent_image(client: Any, base_image: str) -> Any:
    """The agent image ``base_image`` as the engine has it, or one ``EnvError`` line."""
    try:
        return client.images.get(base_image)
    except Exception as exc:
        raise EnvError(f"agent image {base_image} is not available ({exc}); run `skillctl image build`") from None


def cached_env_image(client: Any, digest: str) -> Any | None:
    """The image already built for ``digest``, tagged as a run starts it, or None."""
    found = find_env_image(client, digest)
    if found is not None and f"{ENV_REPO}:{digest[:12]}" not in found.tags:
        found.tag(ENV_REPO, digest[:12])  # its tag was removed (found by its label): the run starts the tag
    return found


def existing_env_image(client: Any, base_image: str, digest_of: Callable[[str], str], force: bool, *,
                       base: Any = None) -> tuple[Any, str, str | None]:
    """(base image, environment hash, tag of an existing image or None). ``base``: the agent
    image already inspected, when the caller has it."""
    base = base if base is not None else agent_image(client, base_image)
    digest = digest_of(base.id)
    found = None if force else cached_env_image(client, digest)
    return base, digest, (None if found is None else f"{ENV_REPO}:{digest[:12]}")


def build_env_image(
    client: Any,
    base: Any,
    digest: str,
    wheels: Sequence[EnvFile],
    debs: Sequence[EnvFile],
    *,
    uv_bin: str,
    progress: Progress | None = None,
    force: bool = False,
    uv: str = "",
    buckets: int = BUCKETS,
    alone_above: float = ALONE_ABOVE,
    isolated: Sequence[IsolatedFiles] = (),
) -> str:
    """Build the environment image ``digest`` from these verified files on ``base``: each part
    of the wheels (``partition``) found or built as its image, then the image from the parts.
    ``uv``: uv's version (part of each part's hash); ``isolated``: the skills with a venv of
    their own, and their wheels (a build stage each, in the final build)."""
    say = progress or (lambda _line: None)
    tag = f"{ENV_REPO}:{digest[:12]}"
    user = (base.attrs.get("Config") or {}).get("User") or "0:0"
    packages = " ".join(sorted(w.pin for w in wheels) + sorted(d.pin for d in debs)
                        + sorted(f"{i.skill}:{w.pin}" for i in isolated for w in i.wheels))
    parts = partition(wheels, buckets=buckets, alone_above=alone_above) or [[]]  # Debian only: an empty venv
    hashes = [part_hash(base.id, part, uv or uv_bin) for part in parts]
    say(f"building environment image {tag} ({len(wheels)} wheel(s) in {len(parts)} part(s), {len(debs)} Debian "
        f"package(s), {len(isolated)} skill(s) with a venv of their own, no network)")
    wheel_names = {w.pin: w.path.name for w in [*wheels, *(w for i in isolated for w in i.wheels)]}
    made: list[str] = []  # the parts this call built: a refused build removes them
    steps: list[str] = []  # the image of each finished step, in order
    try:
        for part, h in zip(parts, hashes):
            if not force and _find(client, LABEL_PART, h) is not None:
                say(f"  part {h[:12]} ({len(part)} wheel(s)) is built already")
                continue
            say(f"  part {h[:12]}: {' '.join(w.pin for w in part)}")
            made.append(h)
            _build_part(client, base, h, part, uv_bin, say, wheel_names, steps, force)
        with tempfile.TemporaryDirectory(prefix="skillctl-env-build-", dir="/var/tmp") as tmp:
            _context(Path(tmp), hashes, debs, user, uv_bin=uv_bin, digest=digest, isolated=isolated)
            stream = client.api.build(
                path=tmp, tag=tag, buildargs={"BASE": base.id}, network_mode="none", pull=False, rm=True, forcerm=True,
                nocache=force,
                labels={LABEL_ENV: digest, LABEL_BASE: base.id, LABEL_PACKAGES: packages[:4000],
                        LABEL_PARTS: " ".join(h[:12] for h in hashes)}, decode=True,
            )
            _follow(stream, tag, say, wheel_names, steps)
    except EnvError:
        if steps:
            _remove_untagged(client, steps[-1])  # a refused build leaves no layers behind
        for h in made:
            _remove_part(client, h)
        raise
    finally:
        if isolated:
            _remove_stage(client, digest)  # the isolated skills' stages (uv and their wheels)
    return tag


def _build_part(client: Any, base: Any, h: str, part: Sequence[EnvFile], uv_bin: str, say: Progress,
                wheel_names: dict[str, str], steps: list[str], force: bool) -> None:
    part_tag = f"{PART_REPO}:{h[:12]}"
    try:
        with tempfile.TemporaryDirectory(prefix="skillctl-env-part-", dir="/var/tmp") as tmp:
            _part_context(Path(tmp), part, uv_bin, h)
            stream = client.api.build(
                path=tmp, tag=part_tag, buildargs={"BASE": base.id}, network_mode="none", pull=False, rm=True,
                forcerm=True, nocache=force, decode=True,
                labels={LABEL_PART: h, LABEL_BASE: base.id, LABEL_PACKAGES: " ".join(w.pin for w in part)[:4000]},
            )
            _follow(stream, part_tag, say, wheel_names, steps)
    finally:
        _remove_stage(client, h)


def _find(client: Any, label: str, value: str) -> Any | None:
    images = list_images(client, {"label": f"{label}={value}"})
    return max(images, key=lambda i: i.attrs.get("Created", "")) if images else None


def _remove_part(client: Any, h: str) -> None:
    import docker.errors
    import requests.exceptions

    try:
        for image in list_images(client, {"label": f"{LABEL_PART}={h}"}):
            client.images.remove(image.id, force=True)
    except (docker.errors.APIError, requests.exceptions.RequestException):
        pass  # in use by a concurrent build meanwhile: `skillctl env prune` removes it later


_STEP_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12,64})$")
# Terminal control sequences: Docker wraps every write of a RUN step's stderr in "\x1b[91m" …
# "\x1b[0m", and uv writes "+ name==version" in several writes; colours of any other tool too.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def split_lines(pending: str, chunk: str) -> tuple[list[str], str]:
    """(whole lines, what is left for the next chunk) of build output that arrives in fragments:
    lines end at "\n" or "\r" (a progress bar redrawing its line), control sequences removed,
    a fragment is held until its line ends."""
    *lines, rest = (pending + chunk).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [_ANSI.sub("", line).rstrip() for line in lines], rest


def _follow(stream: Any, tag: str, say: Progress, wheel_names: dict[str, str], steps: list[str]) -> None:
    """Relay the build's output, whole lines only, noting each step's image in ``steps``; a
    failure is one ``EnvError`` line (the shadow check's, when it is what failed)."""
    shadowing: list[dict[str, str]] = []
    pending = ""  # output arrives in chunks that need not end at a line's end
    for event in stream:
        if "error" in event:
            if shadowing:
                raise EnvError(shadow.refusal(shadowing, wheel_names))
            detail = _ANSI.sub("", str(event.get("error", ""))).strip().splitlines()[-1:] or ["unknown error"]
            raise EnvError(f"building environment image {tag} failed: {detail[0]}")
        lines, pending = split_lines(pending, str(event.get("stream", "")))
        for line in lines:
            found = shadow.parse(line)
            step = _STEP_IMAGE.match(line)
            if found is not None:
                shadowing.append(found)
            elif line.strip():
                say(f"  {line}")
            if step:
                steps.append(step.group(1))
    rest = _ANSI.sub("", pending).rstrip()
    if rest.strip():
        say(f"  {rest}")


def _remove_untagged(client: Any, image_id: str) -> None:
    """Remove an untagged image of a failed build with its untagged parents (never a tagged
    one, such as the agent image, nor one another image or container still uses)."""
    import docker.errors
    import requests.exceptions

    try:
        if not client.images.get(image_id).tags:
            client.images.remove(image_id, force=False, noprune=False)
    except (docker.errors.APIError, requests.exceptions.RequestException):
        pass  # in use meanwhile (a concurrent build reuses the layer): `docker image prune` removes it later


def _remove_stage(client: Any, digest: str) -> None:
    """Drop the build stage (uv + wheels, ~2x the environment) left behind as an untagged image,
    whether the build succeeded or not."""
    import docker.errors
    import requests.exceptions

    try:
        for image in list_images(client, {"label": f"{LABEL_STAGE}={digest}", "dangling": True}):
            try:
                client.images.remove(image.id)
            except docker.errors.APIError:
                pass  # in use by a concurrent identical build: it is removed by that build or by prune
    except requests.exceptions.RequestException:
        pass  # the engine is too busy to answer in time: the image is built; `skillctl env prune` removes the stage
