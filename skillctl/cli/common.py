"""Options and output helpers shared by commands."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click

from skillctl.errors import SkillctlError

if TYPE_CHECKING:  # an annotation only: validate, which uses these helpers, needs no registry
    from skillctl.protocols import Registry

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format; json goes to stdout, progress and warnings to stderr.",
)


exclude_option = click.option(
    "--exclude",
    "exclude",
    multiple=True,
    metavar="GLOB",
    help="Leave folders out of the search for skills (gitignore syntax, relative to PATH; repeatable): "
    "--exclude drafts --exclude 'skills/experimental/'.",
)


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses ``nan`` and ``inf``: ``nan`` compares false with
    every bound, so FloatRange lets it through, and ``inf`` passes any lower bound — both then
    fail deep inside (``int(inf * 1e9)`` for a CPU limit). Exit 2, naming the option."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number



def emit_json(data: Any) -> None:
    import json  # only commands asked for --format json pay for it

    click.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))


def progress(message: str) -> None:
    """Progress for people: stderr, so stdout stays clean for --format json and pipes."""
    click.echo(message, err=True)


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


def checked_registry_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: a registry URL no backend could open is a bad option value (exit 2)."""
    if value:
        from skillctl.registry import check_registry_url

        try:
            check_registry_url(value)
        except SkillctlError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


_registry_url_option = click.option(
    "--registry",
    "registry_url",
    envvar="SKILLCTL_REGISTRY",
    metavar="URL",
    callback=checked_registry_url,
    help="Registry: a folder path (the embedded registry), oci://HOST[:PORT]/NAMESPACE, https://HOST "
    "(a site publishing /.well-known/agent-skills/, read-only), or an MCP server serving skills, "
    "mcp+stdio:'COMMAND ARGS' or mcp+https://HOST/PATH (read-only). "
    "Env: SKILLCTL_REGISTRY. Default: a folder in your user data directory.",
)

# How to reach a remote registry. Not passed to the command functions (expose_value=False):
# they land in ctx.meta and open_registry_for_cli hands them to the backend, so every command
# that takes --registry gets them without changing its signature.
_ACCESS_KEY = "skillctl.registry_access"


def _remember_access(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    access = ctx.meta.setdefault(_ACCESS_KEY, {})
    if param.name in ("password_stdin", "token_stdin"):
        if not value:
            return value
        if "password" in access or "token" in access:
            raise click.UsageError("--password-stdin and --token-stdin both read standard input; give the password in "
                                   "SKILLCTL_REGISTRY_PASSWORD or the key in SKILLCTL_SITE_TOKEN instead")
        stdin = sys.stdin  # click.testing.CliRunner swaps it, so tests can pipe a secret
        if param.name == "password_stdin":
            password = stdin.read().rstrip("\r\n")
            if not password:
                raise click.UsageError("--password-stdin: nothing was read from standard input")
            access["password"] = password
        else:
            token = stdin.readline().strip()
            if not token:
                raise click.UsageError("--token-stdin: the first line of standard input is empty; pipe the key to it")
            access["token"] = token
        return value
    access[param.name] = value
    return value


def registry_access_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--insecure, --username, --password-stdin (for oci:// registries), --token-stdin (for sites)."""
    for opt in (
        click.option("--token-stdin", "token_stdin", is_flag=True, expose_value=False, callback=_remember_access,
                     help="Read the key of a private https:// skills site (skillctl serve --keys) from the first line "
                     "of stdin; it is sent to that site's origin only. Env: SKILLCTL_SITE_TOKEN."),
        click.option("--password-stdin", "password_stdin", is_flag=True, expose_value=False, callback=_remember_access,
                     help="Read the registry password from stdin. Without it: SKILLCTL_REGISTRY_PASSWORD, "
                     "then the Docker config (~/.docker/config.json auths, credential helpers)."),
        click.option("--username", "username", metavar="USER", expose_value=False, callback=_remember_access,
                     help="Registry user name (with --password-stdin). Env: SKILLCTL_REGISTRY_USERNAME."),
        click.option("--insecure", "insecure", is_flag=True, envvar="SKILLCTL_INSECURE", expose_value=False,
                     callback=_remember_access,
                     help="Speak plain HTTP to an oci:// registry, or read an http:// skills site (never the default). "
                     "Env: SKILLCTL_INSECURE=1."),
    ):
        f = opt(f)
    return f


def registry_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """--registry plus the options for reaching a remote registry."""
    return _registry_url_option(registry_access_options(f))


def registry_origin(param: str = "registry_url", option: str = "--registry") -> str:
    """Where this command's registry came from, as ``NoRegistryError`` names it: ``option``
    (typed on the command line), ``SKILLCTL_REGISTRY`` (its environment variable) or ``default``."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(param) if ctx is not None else None
    if source is ParameterSource.ENVIRONMENT:
        return "SKILLCTL_REGISTRY"
    if source in (None, ParameterSource.DEFAULT):
        return "default"
    return option


def registry_opener(url: str | None, *, origin: str | None = None, create: bool = False, **options: Any) -> Callable[[], Registry]:
    """A function that opens the registry ``url`` with this command's access options (from
    --insecure, --username, --password-stdin, --token-stdin), callable later and from any
    thread: for commands that need a client per thread (``serve``). Only with ``create`` may a
    missing folder registry become a new one, which is said on stderr; otherwise the error names
    where the path came from (``origin``, by default this command's --registry)."""
    from skillctl.errors import NoRegistryError
    from skillctl.registry import open_registry

    access = given_access()
    for key in ("insecure", "username", "password", "token"):
        if access.get(key):
            options.setdefault(key, access[key])
    if create:
        options.setdefault("on_create", lambda path: progress(f"created registry at {path}"))
    came_from = origin if origin is not None else registry_origin()

    def opened() -> Registry:
        try:
            return open_registry(url, create=create, **options)
        except NoRegistryError as exc:
            raise NoRegistryError(exc.path, came_from) from None

    return opened


def given_access() -> dict[str, Any]:
    """The access options this command was given (--insecure, --username, the secrets read
    from stdin), by their ``open_registry`` names."""
    ctx = click.get_current_context(silent=True)
    return dict(ctx.meta.get(_ACCESS_KEY, {})) if ctx is not None else {}


def refuse_token_stdin(what: str) -> None:
    """For commands whose runs open the registry themselves: a key read from stdin cannot reach
    them, which is a usage error rather than a key quietly dropped."""
    if given_access().get("token"):
        raise click.UsageError(f"--token-stdin does not reach {what}, which open the registry themselves; "
                               "set SKILLCTL_SITE_TOKEN instead")


def open_registry_for_cli(url: str | None, *, origin: str | None = None, create: bool = False, **options: Any) -> Registry:
    """The registry ``url`` as a command opens it: see ``registry_opener``."""
    try:
        reg = registry_opener(url, origin=origin, create=create, **options)()
    except SkillctlError as exc:
        raise click.ClickException(str(exc)) from exc
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        # Closed when the command ends, also where it does not say `with`: an mcp+stdio: registry
        # is a server process, which should not outlive the command that launched it.
        ctx.call_on_close(reg.close)
    return reg


def output_option(dest: str, *, help: str, old: tuple[str, ...] = (), file: bool = False,  # noqa: A002 - click's name
                  default: Any = None, required: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-o/--output`` for a command's output file (``file``) or folder, stored as ``dest``.

    ``old`` are the spellings it replaces (``--out``, ``--to``, ``--dir``): hidden aliases for one
    release that say on stderr that they are deprecated. Giving both is a usage error. A
    ``required`` output is checked here, after both spellings were read, so the old one counts."""
    from click.core import ParameterSource

    path = click.Path(dir_okay=not file, file_okay=file, path_type=Path)
    key = f"skillctl.output_alias.{dest}"

    def given(ctx: click.Context) -> bool:
        return ctx.get_parameter_source(dest) not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)

    def from_alias(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return value
        spelling = param.opts[0]
        click.echo(f"{spelling} is deprecated; use -o/--output", err=True)
        if dest in ctx.params and given(ctx):
            raise click.UsageError(f"give the output once: -o/--output ({spelling} is its old name)", ctx)
        ctx.meta[key] = value
        ctx.params[dest] = value
        return value

    def from_output(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if key in ctx.meta:
            if given(ctx):
                raise click.UsageError("give the output once: -o/--output (the other spelling is its old name)", ctx)
            return ctx.meta[key]
        if value is None and required:
            raise click.MissingParameter(ctx=ctx, param=param)
        return value

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for spelling in reversed(old):
            f = click.option(spelling, f"{dest}_{spelling.strip('-')}_alias", type=path, hidden=True,
                             expose_value=False, callback=from_alias, help="Old name of -o/--output.")(f)
        metavar = "FILE" if file else "DIR"
        return click.option("-o", "--output", dest, type=path, default=default, show_default=default is not None,
                            metavar=metavar, callback=from_output, help=help)(f)

    return decorate


class NeedsYes(click.ClickException):
    """A confirmation nobody can give (no terminal): a bad invocation, exit 2, said in one line
    (a ``UsageError`` would add the usage lines)."""

    exit_code = 2


def confirm(question: str, *, yes: bool, refused: str) -> None:
    """Ask ``question`` on the terminal unless ``yes``; without a terminal, fail naming --yes.
    Call it after checking that the target exists, so a typo is reported as such, not asked
    about. ``refused`` starts the one-line error: "memory clear proj"."""
    if yes:
        return
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise NeedsYes(f"{refused}: no terminal to confirm on; pass --yes to go ahead")
    click.confirm(question, abort=True, err=True)


def terminal_width() -> int:
    """Columns of the terminal (``COLUMNS`` when set, else the terminal's; 80 when there is none)."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def fit(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` characters, a cut marked with "…"."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    return text[:max(width - 1, 0)] + "…"
