"""Round trip: skillctl's own server (``skillctl mcp serve --registry DIR``) read by skillctl's
client gives the very bundle the folder registry holds — same digest, same tar digest, same files."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from click.testing import CliRunner

from skillctl.bundle import read_bundle, sha256_digest
from skillctl.cli import cli
from skillctl.registry import open_registry
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder


def test_a_registry_served_by_mcp_serve_installs_byte_for_byte(tmp_path: Path, monkeypatch, checkout_root: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", str(checkout_root))
    monkeypatch.delenv("SKILLCTL_REGISTRY", raising=False)
    src = tmp_path / "src" / "tally"
    (src / "scripts").mkdir(parents=True)
    (src / "SKILL.md").write_text("---\nname: tally\ndescription: Count things\nmetadata:\n  version: 1.2.0\n---\n# tally\n")
    (src / "scripts" / "run.sh").write_text("#!/bin/sh\necho 1\n")
    (src / "scripts" / "run.sh").chmod(0o755)
    with LocalRegistry(tmp_path / "reg", create=True) as reg:
        reg.publish(prepare_folder(src))
        want = reg.resolve("tally")
        files = read_bundle(reg.fetch(want)).files
    server = "mcp+stdio:" + shlex.join([sys.executable, "-m", "skillctl", "mcp", "serve", "--registry", str(tmp_path / "reg")])

    with open_registry(server) as mcp:
        got = mcp.resolve("tally@^1")
        assert (got.version, got.digest, got.tar_digest) == ("1.2.0", want.digest, want.tar_digest)
        assert sha256_digest(mcp.fetch(got)) == want.digest
        children = mcp.client.read_directory("skill://tally")  # skillctl's server declares directoryRead
        assert {(c["uri"], c.get("mimeType")) for c in children} >= {("skill://tally/scripts", "inode/directory")}

    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    result = CliRunner().invoke(cli, ["add", server], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    locked = json.loads((project / "skills.lock").read_text())["skills"]["tally"]
    assert (locked["digest"], locked["tar_digest"]) == (want.digest, want.tar_digest)
    result = CliRunner().invoke(cli, ["install", "--frozen"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    installed = project / ".agents" / "skills" / "tally"
    assert {p: (installed / p).read_bytes() for p in files} == dict(files)
    assert os.access(installed / "scripts" / "run.sh", os.X_OK)
