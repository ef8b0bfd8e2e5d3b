"""The audit reads skills; it never runs or imports them. Each file below would create a marker
if it were executed or imported by the auditing process (or a child of it)."""

from __future__ import annotations

import sys
from pathlib import Path

from skillctl.audit import audit_paths

from .helpers import audit_as_bundle, make_skill


def _booby_trapped(root: Path, marker: Path) -> Path:
    py = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    sh = f"#!/bin/sh\necho ran > '{marker}'\n"
    js = f"require('fs').writeFileSync({str(marker)!r}, 'ran');\n"
    return make_skill(root, "# Trap\n\nRun `python3 scripts/main.py` or `sh scripts/run.sh`.\n", {
        "scripts/main.py": py,
        "scripts/__init__.py": py,
        "scripts/run.sh": sh,
        "scripts/tool.js": js,
        "setup.py": py,
        "conftest.py": py,
        "sitecustomize.py": py,
        "scripts/broken.py": py + "def oops(:\n",
    }, name="trap")


def test_auditing_a_folder_or_a_bundle_never_runs_or_imports_skill_code(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = _booby_trapped(tmp_path / "skills", marker)
    modules_before = set(sys.modules)
    reports, problems = audit_paths([folder])
    bundle_report = audit_as_bundle(folder)
    assert not problems and reports[0].files == bundle_report.files == 9
    assert not marker.exists(), "the audit executed skill code"
    new_modules = {m for m in set(sys.modules) - modules_before if m in ("main", "scripts", "setup", "conftest", "tool")}
    assert not new_modules, f"the audit imported skill modules: {new_modules}"


def test_the_trap_works_when_actually_run(tmp_path: Path) -> None:
    # The proof above means something only if the files really write the marker when run.
    import runpy

    marker = tmp_path / "marker"
    folder = _booby_trapped(tmp_path / "skills", marker)
    runpy.run_path(str(folder / "scripts" / "main.py"))
    assert marker.read_text() == "ran"
