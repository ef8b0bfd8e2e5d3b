"""The network options of ``skillctl run``, turned into the ``RunSpec`` fields they stand for.

The options do not reach the command function (``expose_value=False``): they land in
``ctx.meta`` and ``egress_spec`` turns them into ``network``/``egress_*`` keyword arguments, so
``run`` wires egress in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click

_KEY = "skillctl.egress_options"


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta.setdefault(_KEY, {})[param.name] = value
    return value


def egress_options(f: Callable[..., Any]) -> Callable[..., Any]:
    file_type = click.Path(dir_okay=False, exists=True, path_type=Path)
    for opt in reversed(
        [
            click.option("--network-policy", "network_policy", type=file_type, expose_value=False, callback=_remember,
                         help="Network policy file (JSON or YAML): {type: disabled} (the default) or {type: allowlist, "
                         "allowed_domains: [...], domain_secrets: [{domain, name, value: env:VAR|file:PATH}], "
                         "passthrough_domains: [...] (TLS spliced, not intercepted: no path logged, no scrubbing)}. "
                         "Default: 'network:' in skills.yaml (beside --lock, else in the current folder)."),
            click.option("--project-secrets", "project_secrets", is_flag=True, envvar="SKILLCTL_PROJECT_SECRETS",
                         expose_value=False, callback=_remember,
                         help="Use the domain_secrets that 'network:' in skills.yaml names (the host's env:VAR and "
                         "file:PATH values, sent to its domains). Without it a project file that names secrets stops "
                         "the run; its file: values must lie inside the project folder either way. "
                         "Env: SKILLCTL_PROJECT_SECRETS."),
            click.option("--allow-domain", "allow_domain", multiple=True, metavar="DOMAIN", expose_value=False, callback=_remember,
                         help="Allow HTTP(S) to DOMAIN through the egress proxy; *.example.com allows its subdomains "
                         "only. Repeatable; turns the network on."),
            click.option("--domain-secret", "domain_secret", multiple=True, metavar="NAME@DOMAIN", expose_value=False,
                         callback=_remember,
                         help="The container sees $NAME as a placeholder; the proxy puts the host's real $NAME in its "
                         "place in requests to DOMAIN only (allow DOMAIN too). Repeatable."),
            click.option("--egress-resolve", "egress_resolve", multiple=True, metavar="HOST=ADDR:PORT", expose_value=False,
                         callback=_remember,
                         help="The proxy connects to ADDR:PORT for HOST (like curl --resolve); the only way to reach "
                         "loopback, link-local or private addresses. Repeatable."),
            click.option("--egress-ca", "egress_ca", multiple=True, type=file_type, metavar="FILE", expose_value=False,
                         callback=_remember, help="Extra CA certificates (PEM) the proxy trusts for upstream TLS (with passthrough "
                         "domains the container trusts them too). Repeatable."),
            click.option("--egress-log", "egress_log", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
                         expose_value=False, callback=_remember,
                         help="Write every proxied request and refused connection as JSON Lines to FILE (mode: intercept "
                         "or passthrough; a passthrough record is one connection, without its path)."),
        ]
    ):
        f = opt(f)
    return f


def egress_spec(lock_path: Path | None, sandbox_name: str) -> dict[str, Any]:
    """``RunSpec`` keyword arguments for the run's network: the policy (from --network-policy,
    else skills.yaml's ``network:`` beside the lock or here — its secrets only with
    --project-secrets, and a notice on stderr when it turns the network on —, extended by the
    shorthands) and the egress options. Options that need a network without one are a usage
    error."""
    from skillctl.cli.common import progress
    from skillctl.egress.policy import choose_policy
    from skillctl.project.spec import project_file

    opts = click.get_current_context().meta.get(_KEY, {})
    policy = choose_policy(opts.get("network_policy"), project_file(lock_path), opts.get("allow_domain", ()),
                           opts.get("domain_secret", ()), project_secrets=bool(opts.get("project_secrets")), notice=progress)
    extra = {name: opts[name] for name in ("egress_resolve", "egress_ca", "egress_log") if opts.get(name)}
    if not policy.enabled:
        if extra:
            given = ", ".join(f"--{name.replace('_', '-')}" for name in extra)
            raise click.UsageError(f"{given} {'needs' if len(extra) == 1 else 'need'} a network: add --allow-domain or --network-policy")
        return {"network": policy}  # decided here: the library must not apply the project's again
    if sandbox_name != "docker":
        raise click.UsageError("network egress needs --sandbox docker (the local sandbox has the host's whole network)")
    return {"network": policy, **extra}
