"""Package installs: look-alikes, unvetted sources and missing pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillctl.audit import default_rules
from skillctl.audit.packages import lookalike_of

from .helpers import audit


def _install(tmp_path: Path, command: str):
    return {(f.rule.id, f.detail) for f in audit(tmp_path, f"# Demo\n\n```sh\n{command}\n```\n").findings}


@pytest.mark.parametrize(("name", "ecosystem", "target"), [
    ("reqeusts", "pypi", "requests"), ("requets", "pypi", "requests"), ("numpyy", "pypi", "numpy"),
    ("colourama", "pypi", "colorama"), ("expresss", "npm", "express"), ("lodahs", "npm", "lodash"),
])
def test_one_edit_from_a_well_known_name_is_a_lookalike(name: str, ecosystem: str, target: str) -> None:
    assert lookalike_of(name, default_rules().packages[ecosystem]) == target


@pytest.mark.parametrize("name", ["requests", "boto3", "pypdf2", "pyaml", "scapy", "python-docx", "aws-cdk", "mypkg", "flask-cors"])
def test_well_known_names_and_their_real_siblings_are_not_lookalikes(name: str) -> None:
    rs = default_rules()
    assert lookalike_of(name, rs.packages["pypi"] | rs.packages["npm"]) is None


def test_non_ascii_lookalike_characters_are_caught(tmp_path: Path) -> None:
    (detail,) = [d for r, d in _install(tmp_path, "pip install r\u0435quests") if r == "SA851"]
    assert "looks like the well-known pypi package 'requests'" in detail


@pytest.mark.parametrize(("command", "rule"), [
    ("pip install --extra-index-url http://203.0.113.5/simple tools", "SA852"),
    ("pip install -i https://pkgs.example/simple tools==1.0", "SA852"),
    ("pip install http://198.51.100.7/tool.tar.gz", "SA852"),
    ("pip install git+https://github.com/o/r.git", "SA854"),
    ("npm install github:o/r", "SA854"),
    ("pip install pyyaml", "SA853"),
    ("uv pip install numpy pandas", "SA853"),
])
def test_sources_and_pins(tmp_path: Path, command: str, rule: str) -> None:
    assert rule in {r for r, _ in _install(tmp_path, command)}


@pytest.mark.parametrize("command", [
    "pip install pyyaml==6.0.1", "pip install git+https://github.com/o/r.git@0123456789abcdef0123456789abcdef01234567",
    "npm install express@4.19.2", "pip install -r requirements.txt", "pip install -e .", "npx -y some-tool@1.2.3 run fast",
    "pip install --index-url https://pypi.org/simple pyyaml==6.0.1",
])
def test_pinned_or_local_installs_raise_nothing(tmp_path: Path, command: str) -> None:
    assert not _install(tmp_path, command)


def test_npx_runs_one_package_and_the_rest_are_its_arguments(tmp_path: Path) -> None:
    assert _install(tmp_path, "npx cowsay hello world") == {("SA853", "no version pinned for cowsay")}


def test_requirements_files_are_read(tmp_path: Path) -> None:
    report = audit(tmp_path, files={"scripts/requirements.txt": "reqeusts==2.0\npyyaml\n# comment\nnumpy==1.26.4\n"})
    assert sorted((f.rule.id, f.line) for f in report.findings) == [("SA851", 1), ("SA853", 2)]
