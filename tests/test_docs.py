"""The docs site stays true: it builds with ``mkdocs build --strict`` (no dead link or anchor, no
page outside the nav, nothing fetched from the web), the CLI reference is the commands' own help,
and the shell blocks marked ``<!-- test -->`` run as written."""

from __future__ import annotations

import functools
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


# ------------------------------------------------------------------------------ the layer picture

# docs/architecture.md's picture, bottom first. A package imports only from layers below its own
# (or its own layer's leaves, or its own package); the exceptions are the ones the page names.
# skillctl.mcp spans two layers, so its modules are placed one by one.
LAYERS = [
    {"messages", "tokens", "versioning", "yamlfile", "fsutil", "nesting", "lazy", "words", "schema", "errors", "__version__"},
    {"protocols"},
    {"skill"},
    {"bundle"},
    {"mcp.uris", "mcp.entry", "mcp.client", "mcp.hosts"},  # the MCP extension's data and client
    {"registry", "sandbox", "models", "context"},
    {"audit", "env", "egress"},
    {"trust", "sources"},
    {"project"},
    {"runtime"},
    {"many", "serve", "mcp", "mcp.catalog", "mcp.server", "mcp.http"},
    {"cli"},
    {"__main__"},  # python -m skillctl
]
# importer module -> skillctl packages it may take from at or above its layer, and why
ALLOWED_UPWARD = {
    "skillctl.skill.validate": {"env"},  # env.imports, the SK251/SK252 checker, imported lazily
    "skillctl.protocols": {"bundle", "registry"},  # records for annotations only (TYPE_CHECKING)
    "skillctl.mcp.http": {"serve"},  # the HTTP transport runs on serve's server and keys
}


def _place(bits: list[str]) -> str:
    """The name a module is placed by: its top package, or ``mcp.MODULE`` inside skillctl.mcp."""
    if bits[0] == "mcp" and len(bits) > 1 and (ROOT / "skillctl" / "mcp" / f"{bits[1]}.py").exists():
        return f"mcp.{bits[1]}"
    return bits[0]


@functools.cache
def _imports() -> list[tuple[str, str, str]]:
    """(importing module, where it is placed, where the imported module is placed) for every
    skillctl import, module level or inside a function."""
    import ast

    found = []
    for path in sorted((ROOT / "skillctl").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if parts[-1] == "__init__" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                names = [f"{target}.{a.name}" for a in node.names] if target in ("skillctl", "skillctl.mcp") else [target]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                bits = name.split(".")
                if bits[0] == "skillctl" and len(bits) > 1 and len(parts) > 1:
                    src = _place([p for p in parts[1:] if p != "__init__"])
                    found.append((module, src, _place(bits[1:])))
    return found


def test_the_architecture_pages_layers_hold() -> None:
    layer = {name: n for n, names in enumerate(LAYERS) for name in names}
    upward = sorted({(module, dst) for module, src, dst in _imports()
                     if src.split(".")[0] != dst.split(".")[0] and layer[dst] >= layer[src] and layer[dst] > 0
                     and dst not in ALLOWED_UPWARD.get(module, set())})
    assert upward == []
    picture = (DOCS / "architecture.md").read_text("utf-8")
    assert all(name.split(".")[-1] in picture for names in LAYERS for name in names - {"__version__", "__main__"})


def test_nothing_imports_cli_and_only_cli_imports_many() -> None:
    edges = {(src.split(".")[0], dst.split(".")[0]) for _, src, dst in _imports()}
    edges = {(src, dst) for src, dst in edges if src != dst}
    assert {src for src, dst in edges if dst == "cli"} <= {"__main__"}
    assert {src for src, dst in edges if dst == "many"} == {"cli"}
    assert {src for src, dst in edges if dst == "serve"} == {"cli", "mcp"}
    assert {dst for src, dst in edges if src == "errors"} == set()
