"""``skillctl serve``: the registry as the OpenAI and Anthropic skills APIs and a well-known
site; ``skillctl serve key add|list|revoke``: the keys it accepts."""

from __future__ import annotations

import ssl
from pathlib import Path

import click

from skillctl.cli.common import FiniteFloatRange, emit_json, format_option, library_errors, progress, registry_opener, registry_option
from skillctl.errors import NoRegistryError

_CERT_REQS = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_SEVERITIES = ("low", "medium", "high", "critical")


keys_option = click.option(
    "--keys", "keys_file", type=click.Path(dir_okay=False, path_type=Path), envvar="SKILLCTL_SERVE_KEYS",
    help="The keys file (JSON, 0600, hashes only). Env: SKILLCTL_SERVE_KEYS.",
)


@click.group("serve", invoke_without_command=True)
@registry_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on (0: any free port; the URL is printed).")
@keys_option
@click.option("--public-read", is_flag=True, help="Let anyone list, read and download without a key (writes still need one).")
@click.option("--threads", default=4, show_default=True, type=click.IntRange(1, 64), help="Registry worker threads.")
@click.option("--max-request-bytes", type=click.IntRange(1024), default=None,
              help="Largest request body accepted, checked while it is read. Default: the bundle size limit (50 MiB) plus 1 MiB.")
@click.option("--refresh", "refresh_s", default=5.0, show_default=True, type=FiniteFloatRange(0),
              help="Seconds before changes other writers make to the registry show in lists and the well-known index.")
@click.option("--audit-fail-on", type=click.Choice(_SEVERITIES), default=None,
              help="Refuse uploads with audit findings at or above this severity (default: no audit, as skillctl publish).")
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="TLS certificate chain (PEM): serve HTTPS.")
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="TLS private key (PEM).")
@click.option("--ssl-keyfile-password", envvar="SKILLCTL_SERVE_SSL_KEYFILE_PASSWORD", help="Password of the TLS key. Env: SKILLCTL_SERVE_SSL_KEYFILE_PASSWORD.")
@click.option("--ssl-ca-certs", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="CA certificates for client certificates.")
@click.option("--ssl-cert-reqs", type=click.Choice(list(_CERT_REQS)), default="none", show_default=True, help="Whether clients must present a certificate.")
@click.option("--shutdown-timeout", default=30.0, show_default=True, type=FiniteFloatRange(0), help="Seconds requests in flight get to finish after SIGINT/SIGTERM.")
@click.option("--max-connections", default=512, show_default=True, type=click.IntRange(1),
              help="Requests served at once; more get 503 (connections still sending their request head do not count).")
@click.option("--header-timeout", default=10.0, show_default=True, type=FiniteFloatRange(0.1),
              help="Seconds a connection gets for the head of each request (request line and headers, TLS handshake "
                   "included), from connecting or from the end of its last answer; then it is closed.")
@click.option("--body-timeout", default=30.0, show_default=True, type=FiniteFloatRange(0.1),
              help="Seconds a request body may stall before it is answered 408 (an upload then gives its slot up).")
@click.option("--body-min-rate", default=8192, show_default=True, type=click.IntRange(1),
              help="Bytes per second a request body must keep up on average; a slower one is answered 408.")
@click.option("--access-log/--no-access-log", default=True, show_default=True, help="One line per request on stderr.")
@click.pass_context
@library_errors
def serve_group(ctx: click.Context, registry_url: str | None, host: str, port: int, keys_file: Path | None, public_read: bool,
                threads: int, max_request_bytes: int | None, refresh_s: float, audit_fail_on: str | None,
                ssl_certfile: Path | None, ssl_keyfile: Path | None, ssl_keyfile_password: str | None,
                ssl_ca_certs: Path | None, ssl_cert_reqs: str, shutdown_timeout: float, max_connections: int,
                header_timeout: float, body_timeout: float, body_min_rate: int, access_log: bool) -> None:
    """Serve a registry as the OpenAI and Anthropic skills APIs and as a well-known site.

    \b
    OpenAI(base_url="http://HOST:PORT/openai/v1", api_key=KEY).skills…
    Anthropic(base_url="http://HOST:PORT/anthropic", api_key=KEY).skills…
    skillctl install --registry http://HOST:PORT --insecure --token-stdin   (a read key)

    Every upload is validated, checked as a hostile archive and published under the same
    rules as skillctl publish (versions are immutable). Requests need a key from --keys
    (Authorization: Bearer KEY or x-api-key: KEY) with the scope the operation needs: read,
    publish, or admin (delete, yank); --public-read opens reading to everyone. Stops
    gracefully on SIGINT/SIGTERM. Make keys with: skillctl serve key add NAME --keys FILE.
    """
    if ctx.invoked_subcommand is not None:
        return
    try:
        from skillctl.serve.app import DEFAULT_MAX_REQUEST_BYTES, ServeSettings
        from skillctl.serve.http import BodyPace
        from skillctl.serve.server import Listen, SkillServer, configure_logging
    except ImportError as exc:  # the web stack is the optional extra
        raise click.ClickException(f"skillctl serve needs the serve extra ({exc.name} is missing): pip install 'skillctl[serve]'") from None
    from skillctl.registry import default_registry_url

    if ssl_keyfile is not None and ssl_certfile is None:
        raise click.UsageError("--ssl-keyfile needs --ssl-certfile")
    url = registry_url or default_registry_url()
    settings = ServeSettings(
        open_registry=registry_opener(url),
        registry_url=url,
        keys=keys_file,
        public_read=public_read,
        threads=threads,
        max_request_bytes=max_request_bytes or DEFAULT_MAX_REQUEST_BYTES,
        body_pace=BodyPace(timeout_s=body_timeout, min_rate=body_min_rate),
        refresh_s=refresh_s,
        audit_gate=audit_fail_on,
        access_log=access_log,
    )
    listen = Listen(
        host=host, port=port, ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile, ssl_keyfile_password=ssl_keyfile_password,
        ssl_ca_certs=ssl_ca_certs, ssl_cert_reqs=_CERT_REQS[ssl_cert_reqs], shutdown_timeout_s=shutdown_timeout,
        max_connections=max_connections, header_timeout_s=header_timeout,
    )
    configure_logging(access_log)
    server = SkillServer(settings, listen)
    base = server.url

    def ready() -> None:
        progress(f"skillctl serve: {base} (registry {url}; {'keys from ' + str(keys_file) if keys_file else 'no keys'}"
                 f"{', public read' if public_read else ''})")
        progress(f"  OpenAI:     {base}/openai/v1\n  Anthropic:  {base}/anthropic\n"
                 f"  well-known: {base}/.well-known/agent-skills/index.json")

    try:
        server.run(on_ready=ready)
    except NoRegistryError as exc:  # serve reads an existing registry; an empty one is made on purpose
        raise click.ClickException(f"{exc}; or make an empty one to serve: skillctl registry init --registry {exc.path}") from None
    progress("skillctl serve: stopped")


@serve_group.group("key", short_help="Make, list and revoke the API keys a server accepts.")
def key_group() -> None:
    """Make, list and revoke the API keys a server accepts (only their hashes are stored)."""


def _need_keys(keys_file: Path | None) -> Path:
    if keys_file is None:
        raise click.UsageError("give the keys file: --keys FILE (or SKILLCTL_SERVE_KEYS)")
    return keys_file


@key_group.command("add", short_help="Make a key and print it once.")
@click.argument("name")
@click.option("--scopes", default="read", show_default=True, help="Comma-separated: read, publish, admin (delete, yank).")
@keys_option
@format_option
@library_errors
def key_add(name: str, scopes: str, keys_file: Path | None, fmt: str) -> None:
    """Make a key named NAME and print it once, alone on one line (only its SHA-256 is kept).

    The keys file is created if missing (mode 0600) and replaced atomically; a running server
    picks the new key up on its next request.
    """
    from skillctl.serve.keys import add_key, parse_scopes

    path = _need_keys(keys_file)
    secret, record = add_key(path, name, parse_scopes(scopes))
    if fmt == "json":
        emit_json({**record.summary(), "key": secret})
    else:
        click.echo(secret)
    progress(f"key '{name}' ({', '.join(record.summary()['scopes'])}) added to {path}; it is shown only this once")


@key_group.command("list", short_help="List the keys by name, scopes and creation time.")
@keys_option
@format_option
@library_errors
def key_list(keys_file: Path | None, fmt: str) -> None:
    """List the keys: name, scopes, first characters, creation time (never the key or its hash)."""
    from datetime import datetime, timezone

    from skillctl.serve.keys import read_keys

    path = _need_keys(keys_file)
    keys = read_keys(path)
    if fmt == "json":
        emit_json([k.summary() for k in keys])
        return
    if not keys:
        click.echo(f"no keys in {path}")
    for k in keys:
        when = datetime.fromtimestamp(k.created_at, timezone.utc).strftime("%Y-%m-%d %H:%M")
        click.echo(f"{k.name:<20} {','.join(k.summary()['scopes']):<20} {k.prefix}…  {when} UTC")


@key_group.command("revoke", short_help="Revoke a key; a running server refuses it at once.")
@click.argument("name")
@keys_option
@format_option
@library_errors
def key_revoke(name: str, keys_file: Path | None, fmt: str) -> None:
    """Remove the key NAME; a running server refuses it from its next request on."""
    from skillctl.serve.keys import revoke_key

    path = _need_keys(keys_file)
    gone = revoke_key(path, name)
    if fmt == "json":
        emit_json({"revoked": gone.summary()})
    else:
        click.echo(f"revoked {gone.name}")
