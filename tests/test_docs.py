"""The docs site stays true: it builds with ``mkdocs build --strict`` (no dead link or anchor, no
page outside the nav, nothing fetched from the web), the CLI reference is the commands' own help,
and the shell blocks marked ``<!-- test -->`` run as written."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MARKER = "<!-- test -->"
RUNNABLE = re.compile(rf"^{re.escape(MARKER)}\n```bash\n(.*?)^```$", re.M | re.S)


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------ the CLI reference


def test_the_cli_reference_is_the_commands_help() -> None:
    committed = (DOCS / "cli.md").read_text("utf-8")
    assert committed == _cli_reference().render(), "docs/cli.md is out of date: run python scripts/cli_reference.py"


def _command_paths(cmd: click.Command, ctx: click.Context) -> list[str]:
    paths = [ctx.command_path]
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                paths += _command_paths(sub, click.Context(sub, info_name=name, parent=ctx))
    return paths


def test_the_cli_reference_has_every_command_and_subcommand() -> None:
    from skillctl.cli import COMMANDS, cli

    paths = _command_paths(cli, click.Context(cli, info_name="skillctl"))
    headings = re.findall(r"^#+ `(skillctl[^`]*)`$", _cli_reference().render(), re.M)
    assert headings == paths
    assert {f"skillctl {name}" for name in COMMANDS} <= set(headings)
    assert "skillctl serve key add" in headings  # a group inside a group is walked too


def test_the_cli_reference_check_fails_on_a_stale_page(tmp_path, monkeypatch, capsys) -> None:
    module = _cli_reference()
    stale = tmp_path / "cli.md"
    stale.write_text("# CLI reference\n\nan old page\n", "utf-8")
    monkeypatch.setattr(module, "PAGE", stale)
    assert module.main(["--check"]) == 1
    assert "run python scripts/cli_reference.py" in capsys.readouterr().err
    module.main([])
    assert module.main(["--check"]) == 0 and stale.read_text("utf-8") == module.render()


# ------------------------------------------------------------------------------ the site


def test_the_site_builds_strict_and_offline(tmp_path) -> None:
    site = tmp_path / "site"
    # not --quiet: it drops the warnings before --strict counts them, and the build passes
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr
    pages = list(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        html = page.read_text("utf-8")
        # no web font, stylesheet or script from elsewhere: the site works offline as built
        assert not re.search(r'<(?:link|script)[^>]+(?:href|src)="(?:https?:)?//', html), page


# ------------------------------------------------------------------------------ runnable blocks


def _runnable_pages() -> dict[str, list[str]]:
    pages = {}
    for page in sorted(DOCS.rglob("*.md")):
        blocks = RUNNABLE.findall(page.read_text("utf-8"))
        if blocks:
            pages[str(page.relative_to(DOCS))] = blocks
    return pages


def test_every_marker_stands_above_a_bash_block() -> None:
    # a marker followed by anything but a ```bash block would silently run nothing
    markers = {str(p.relative_to(DOCS)): len(re.findall(rf"^{re.escape(MARKER)}$", p.read_text("utf-8"), re.M))
               for p in DOCS.rglob("*.md")}
    blocks = {page: len(found) for page, found in _runnable_pages().items()}
    assert {page: n for page, n in markers.items() if n} == blocks
    assert sum(blocks.values()) >= 4


@pytest.mark.parametrize("page", sorted(_runnable_pages()))
def test_the_marked_blocks_run_as_written(page, tmp_path) -> None:
    """A page's blocks run in order in one empty folder, each as its own ``bash -euo pipefail``,
    with a folder registry there and no way out to the network (a proxy nobody listens on)."""
    bindir = str(Path(sys.executable).parent)  # this environment's skillctl
    env = {
        "PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8",
        "PYTHONPATH": str(ROOT), "SKILLCTL_REGISTRY": str(tmp_path / "work" / "registry"),
        "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
    }
    work = tmp_path / "work"
    work.mkdir()
    for n, block in enumerate(_runnable_pages()[page], 1):
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"{page}, runnable block {n}:\n{block}\n{result.stdout}{result.stderr}"
