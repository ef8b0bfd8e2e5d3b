"""The programs skillctl itself runs inside a sandbox or an image, each by its absolute path.

Never by name: a command's ``PATH`` starts with a skill environment's ``/opt/skills-env/bin``,
where its dependencies' scripts are installed, and a program found there could be a package's
script — a ``timeout`` that ignores the deadline, an ``id`` run as root while staging files. The
paths are the same on Debian with and without merged ``/usr`` (``/bin/sh``, ``/usr/bin/timeout``);
the agent image's Dockerfile refuses a base that lacks one of them, and
``container/entrypoint.sh`` (the keep-alive) runs ``/bin/sleep`` the same way. The supervisor's
path is ``skillctl.sandbox.supervisor.IMAGE_PATH``.
"""

from __future__ import annotations

SH = "/bin/sh"
TIMEOUT = "/usr/bin/timeout"
ID = "/usr/bin/id"  # as root: a named user's uid/gid, to stage files for it
MKDIR = "/bin/mkdir"  # as root or the user: a folder files are staged into
SLEEP = "/bin/sleep"  # the container's keep-alive (entrypoint.sh)
PYTHON3 = "/usr/bin/python3"  # probing the image; checking an environment image while it is built
DPKG = "/usr/bin/dpkg"  # probing the image's architecture

ALL = (SH, TIMEOUT, ID, MKDIR, SLEEP, PYTHON3, DPKG)
