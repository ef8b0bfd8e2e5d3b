"""Options and output helpers shared by commands."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import click

from skillctl.errors import SkillctlError

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format; json goes to stdout, progress and warnings to stderr.",
)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))


def progress(message: str) -> None:
    """Progress for people: stderr, so stdout stays clean for --format json and pipes."""
    click.echo(message, err=True)


def fail(message: str) -> "NoReturn":  # type: ignore[name-defined]
    raise click.ClickException(message)


def library_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn library errors into ClickException (exit 1, one line, no traceback)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SkillctlError as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


registry_option = click.option(
    "--registry",
    "registry_url",
    envvar="SKILLCTL_REGISTRY",
    metavar="URL",
    help="Registry: a folder path (the embedded registry) or oci://HOST[:PORT]/NAMESPACE. "
    "Env: SKILLCTL_REGISTRY. Default: a folder in your user data directory.",
)


def open_registry_for_cli(url: str | None, **options: Any) -> Any:
    from skillctl.registry import open_registry

    try:
        return open_registry(url, **options)
    except SkillctlError as exc:
        raise click.ClickException(str(exc)) from exc
