"""``skillctl memory list|show|clear``: the long-term memories runs keep (``run --memory``)."""

from __future__ import annotations

from datetime import datetime, timezone

import click

from skillctl.cli.common import confirm, emit_json, format_option, library_errors
from skillctl.errors import RunMemoryError
from skillctl.words import count, plural


def _existing(ref: str):
    from skillctl.runtime.memory import Memory

    memory = Memory.locate(ref)
    if not memory.folder.is_dir():
        raise RunMemoryError(f"no memory {ref} (no folder {memory.folder}); see: skillctl memory list")
    return memory


def _when(ts: int | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M") if ts is not None else "-"


@click.group("memory")
def memory_group() -> None:
    """Long-term memories: folders a run mounts at /memory with `skillctl run --memory NAME`.

    Named memories live in the user data folder; a memory given as a path (./DIR) is that folder.
    """


@memory_group.command("list")
@format_option
@library_errors
def list_cmd(fmt: str) -> None:
    """List the named memories with their size and last change."""
    from skillctl.runtime.memory import list_memories, memory_home

    memories = [m.to_dict() for m in list_memories()]
    if fmt == "json":
        emit_json(memories)
        return
    if not memories:
        click.echo(f"no memories in {memory_home()}")
        return
    width = max(len(m["name"]) for m in memories)
    for m in memories:
        click.echo(f"{m['name']:<{width}}  {m['files']:>5} {plural(m['files'], 'file'):<5} {m['bytes']:>10} bytes  {_when(m['modified'])}")


@memory_group.command("show", short_help="Show a memory's files and the start of its MEMORY.md.")
@click.argument("ref", metavar="NAME|DIR")
@format_option
@library_errors
def show_cmd(ref: str, fmt: str) -> None:
    """Show a memory's files and the lines of its MEMORY.md that a run's first context shows."""
    memory = _existing(ref)
    index = memory.index_excerpt()
    if fmt == "json":
        emit_json({**memory.to_dict(), "file_list": [{"path": p, "bytes": n} for p, n in memory.files()], "index": index})
        return
    click.echo(f"{memory.name}: {memory.folder}")
    for path, size in memory.files():
        click.echo(f"  {size:>10}  {path}")
    click.echo("MEMORY.md (as a run sees it):" if index is not None else "no MEMORY.md yet")
    if index is not None:
        click.echo(index)


@memory_group.command("clear")
@click.argument("ref", metavar="NAME|DIR")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@format_option
@library_errors
def clear_cmd(ref: str, yes: bool, fmt: str) -> None:
    """Forget everything in a memory (refused while a run uses it).

    A named memory is deleted; a memory folder given as a path is emptied.
    """
    memory = _existing(ref)
    confirm(f"delete every file of memory {memory.name} ({memory.folder})?", yes=yes, refused=f"memory clear {ref}")
    removed = memory.clear()
    if fmt == "json":
        emit_json({"name": memory.name, "path": str(memory.folder), "removed_files": removed})
    else:
        click.echo(f"cleared memory {memory.name}: {count(removed, 'file')} deleted")
