"""The environment image: a layer on the agent image with a venv and Debian packages.

Built with ``docker build --network none`` from a context that holds only files already checked
on the host: the wheels (and .debs) from the verified cache, a requirements file pinning each
wheel by sha256, and uv's binary (the same one that resolved; it installs, then is left behind in
a build stage). Nothing is downloaded during the build and nothing is pulled.

    stage 1 (venv): as an unprivileged user (65534) owning only /opt/skills-env, uv makes the
                    venv with the image's own python3 and installs the wheels --offline
                    --no-index --require-hashes --no-deps; then the image's python3 -I -S
                    byte-compiles it (-S: no site-packages, so no package's .pth runs)
    stage 2:        the agent image + the .debs (dpkg -i) + /opt/skills-env copied from stage 1,
                    owned by root; no script in its bin may have the name of a command of the
                    image (``shadow``: the build fails naming the wheel); then, as the agent
                    image does, no setuid/setgid file or folder anywhere (bits removed, and the
                    build fails if one is left);
                    PATH starts with /opt/skills-env/bin; the user is the agent image's again

A skill isolated from the merge (``environment: isolate``) gets a venv of its own at
/opt/skill-envs/<skill>, made exactly like stage 1 in a stage of its own (``iso<N>``) and
copied in beside /opt/skills-env, its bin checked by the same shadow check. Then
/opt/skillctl-env/bin — first on PATH — holds ``python3`` and ``python``: a launcher (``/bin/sh``)
that runs a script under /skills/<skill>/ of an isolated skill with that skill's venv (with no
script — ``-c``, ``-m``, stdin — the working folder decides), anything else with the shared one.

No wheel's code runs during the build, as root or at all: wheels are unpacked, not run. The only
package code that runs is Debian packages' maintainer scripts (as root, as dpkg runs them
anywhere), before the venv is copied in.

The image is tagged ``skillctl-env:<hash12>`` where the hash covers the agent image id, every
file's sha256, the build recipe and uv's version; an image with that label is reused.
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
# Bump when the Dockerfile below changes meaning, so old images are not reused for it.
RECIPE_VERSION = "3"
# Who makes the venv in the build stage: a uid that owns nothing else in the image.
BUILD_USER = "65534:65534"

_DOCKERFILE = """\
ARG BASE
FROM ${{BASE}} AS venv
LABEL {stage_label}={digest}
USER 0:0
COPY uv /tmp/skillctl-build/uv
COPY wheels/ /tmp/skillctl-build/wheels/
COPY requirements.txt /tmp/skillctl-build/requirements.txt
RUN mkdir -p {venv} && chown {build_user} {venv}
USER {build_user}
# compileall exits 1 when a file does not compile (some wheels ship such files): not an error.
RUN /tmp/skillctl-build/uv venv --no-config --no-cache --color never --no-python-downloads --python {python3} {venv} \\
 && /tmp/skillctl-build/uv pip install --no-config --color never --offline --no-cache --no-index \\
      --find-links /tmp/skillctl-build/wheels --require-hashes --no-deps --only-binary :all: \\
      --link-mode copy --python {venv}/bin/python -r /tmp/skillctl-build/requirements.txt \\
 && {{ {python3} -I -S -m compileall -q -j 0 {venv}/lib || [ $? -eq 1 ]; }}

FROM ${{BASE}}
USER 0:0
{debs}COPY --from=venv --chown=0:0 {venv} {venv}
{isolated}COPY shadow.py /tmp/skillctl-shadow.py
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
RUN mkdir -p {venv} && chown {build_user} {venv}
USER {build_user}
RUN /tmp/skillctl-build/uv venv --no-config --no-cache --color never --no-python-downloads --python {python3} {venv} \\
 && /tmp/skillctl-build/uv pip install --no-config --color never --offline --no-cache --no-index \\
      --find-links /tmp/skillctl-build/wheels --require-hashes --no-deps --only-binary :all: \\
      --link-mode copy --python {venv}/bin/python -r /tmp/skillctl-build/requirements.txt \\
 && {{ {python3} -I -S -m compileall -q -j 0 {venv}/lib || [ $? -eq 1 ]; }}

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
    images = list_images(client, {"label": f"{LABEL_ENV}={digest}"})
    return max(images, key=lambda i: i.attrs.get("Created", "")) if images else None


def _wheels_folder(folder: Path, wheels: Sequence[EnvFile]) -> None:
    """``folder``/wheels/ and ``folder``/requirements.txt pinning each wheel by sha256."""
    (folder / "wheels").mkdir(parents=True)
    lines = []
    for w in wheels:
        shutil.copyfile(w.path, folder / "wheels" / w.path.name)
        lines.append(f"{w.pin} --hash=sha256:{w.sha256}")
    (folder / "requirements.txt").write_text("\n".join(sorted(lines)) + "\n", "utf-8")


def _isolated_parts(tmp: Path, isolated: Sequence[IsolatedFiles], digest: str) -> tuple[str, str, str]:
    """(stages, copies and checks in the final stage, its PATH line) for the isolated skills;
    their wheel folders and the launcher written into the context ``tmp``."""
    if not isolated:
        return "", "", ""
    stages, copies, checks = [], [], []
    for n, iso in enumerate(isolated):
        _wheels_folder(tmp / "isolated" / str(n), iso.wheels)
        stages.append(_ISOLATED_STAGE.format(n=n, venv=iso.venv, stage_label=LABEL_STAGE, digest=digest,
                                             build_user=BUILD_USER, python3=PYTHON3))
        copies.append(_ISOLATED_COPY.format(n=n, venv=iso.venv))
        checks.append(_ISOLATED_CHECK.format(python3=PYTHON3, venv=iso.venv))
    (tmp / "launcher").write_text(launcher([(i.skill, i.venv) for i in isolated]), "utf-8")
    (tmp / "launcher").chmod(0o755)
    final = "".join(copies) + _ISOLATED_FINAL.format(launcher_dir=LAUNCHER_DIR, checks="".join(checks))
    return "".join(stages), final, f"ENV PATH={LAUNCHER_DIR}:${{PATH}}\n"


def _context(tmp: Path, wheels: Sequence[EnvFile], debs: Sequence[EnvFile], uv_bin: str, user: str, digest: str,
             isolated: Sequence[IsolatedFiles] = ()) -> None:
    _wheels_folder(tmp, wheels)
    shutil.copyfile(uv_bin, tmp / "uv")
    (tmp / "uv").chmod(0o755)
    shutil.copyfile(shadow.__file__, tmp / "shadow.py")
    debs_part = ""
    if debs:
        (tmp / "debs").mkdir()
        for d in debs:
            shutil.copyfile(d.path, tmp / "debs" / d.path.name)
        debs_part = _DEBS.format()
    stages, final, launcher_path = _isolated_parts(tmp, isolated, digest)
    dockerfile = _DOCKERFILE.format(venv=VENV, debs=debs_part, user=user, stage_label=LABEL_STAGE, digest=digest,
                                    build_user=BUILD_USER, python3=PYTHON3, isolated=final, launcher_path=launcher_path)
    if stages:  # the isolated skills' stages go before the final one
        at = dockerfile.index("\nFROM ${BASE}\n") + 1
        dockerfile = dockerfile[:at] + stages + dockerfile[at:]
    (tmp / "Dockerfile").write_text(dockerfile, "utf-8")


def existing_env_image(client: Any, base_image: str, digest_of: Callable[[str], str], force: bool) -> tuple[Any, str, str | None]:
    """(base image, environment hash, tag of an existing image or None)."""
    try:
        base = client.images.get(base_image)
    except Exception as exc:
        raise EnvError(f"agent image {base_image} is not available ({exc}); run `skillctl image build`") from None
    digest = digest_of(base.id)
    tag = f"{ENV_REPO}:{digest[:12]}"
    return base, digest, (None if force or find_env_image(client, digest) is None else tag)


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
    isolated: Sequence[IsolatedFiles] = (),
) -> str:
    """Build the environment image ``digest`` from these verified files on ``base``;
    ``isolated``: the skills with a venv of their own, and their wheels."""
    say = progress or (lambda _line: None)
    tag = f"{ENV_REPO}:{digest[:12]}"
    user = (base.attrs.get("Config") or {}).get("User") or "0:0"
    packages = " ".join(sorted(w.pin for w in wheels) + sorted(d.pin for d in debs)
                        + sorted(f"{i.skill}:{w.pin}" for i in isolated for w in i.wheels))
    say(f"building environment image {tag} ({len(wheels)} wheel(s), {len(debs)} Debian package(s), no network)")
    wheel_names = {w.pin: w.path.name for w in [*wheels, *(w for i in isolated for w in i.wheels)]}
    steps: list[str] = []  # the image of each finished step, in order
    try:
        with tempfile.TemporaryDirectory(prefix="skillctl-env-build-", dir="/var/tmp") as tmp:
            _context(Path(tmp), wheels, debs, uv_bin, user, digest, isolated)
            stream = client.api.build(
                path=tmp, tag=tag, buildargs={"BASE": base.id}, network_mode="none", pull=False, rm=True, forcerm=True,
                nocache=force,
                labels={LABEL_ENV: digest, LABEL_BASE: base.id, LABEL_PACKAGES: packages[:4000]}, decode=True,
            )
            _follow(stream, tag, say, wheel_names, steps)
    except EnvError:
        if steps:
            _remove_untagged(client, steps[-1])  # a refused build leaves no layers behind
        raise
    finally:
        _remove_stage(client, digest)
    return tag


_STEP_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12,64})$")


def _follow(stream: Any, tag: str, say: Progress, wheel_names: dict[str, str], steps: list[str]) -> None:
    """Relay the build's output, noting each step's image in ``steps``; a failure is one
    ``EnvError`` line (the shadow check's, when it is what failed)."""
    shadowing: list[dict[str, str]] = []
    pending = ""  # output arrives in chunks that need not end at a line's end
    for event in stream:
        if "error" in event:
            if shadowing:
                raise EnvError(shadow.refusal(shadowing, wheel_names))
            detail = str(event.get("error", "")).strip().splitlines()[-1:] or ["unknown error"]
            raise EnvError(f"building environment image {tag} failed: {detail[0]}")
        *lines, pending = (pending + str(event.get("stream", ""))).split("\n")
        for line in (ln.rstrip() for ln in lines):
            found = shadow.parse(line)
            step = _STEP_IMAGE.match(line)
            if found is not None:
                shadowing.append(found)
            elif line.strip():
                say(f"  {line}")
            if step:
                steps.append(step.group(1))
    if pending.strip():
        say(f"  {pending.rstrip()}")


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
