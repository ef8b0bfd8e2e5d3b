"""One way to reach the Docker Engine, with one clear error when it is not there."""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

from skillctl.errors import SandboxError

T = TypeVar("T")

NO_DAEMON_HINT = (
    "start the Docker Engine or point DOCKER_HOST at one; for authoring without Docker, "
    "use the unsafe local sandbox explicitly (sandbox 'local' with allow_unsafe_local=True)"
)


def docker_client(timeout_s: float = 60.0) -> Any:
    """A ``docker.DockerClient`` that has answered a ping; ``SandboxError`` otherwise."""
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - docker is a declared dependency
        raise SandboxError("the 'docker' Python package is missing: pip install docker") from exc
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SandboxError(f"cannot reach the Docker daemon ({reason}): {NO_DAEMON_HINT}") from exc
    return client


def is_transient(exc: BaseException) -> bool:
    """Failures worth another try: the daemon was briefly unreachable or overloaded.

    A 4xx (no such container, bad request, conflict) never is: retrying cannot change it.
    """
    import docker.errors
    import requests.exceptions

    if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout)):
        return True
    if isinstance(exc, docker.errors.APIError):
        status = getattr(exc.response, "status_code", None)
        if status in (502, 503, 504):
            return True
        # The daemon answers 500 for many permanent problems too; only retry those it
        # describes as momentary.
        text = str(exc).lower()
        return status == 500 and any(
            word in text for word in ("connection reset", "timeout", "temporarily", "try again")
        )
    return False


def daemon_failures() -> tuple[type[BaseException], ...]:
    """What a failed daemon call raises: the daemon's error answer, or no answer in time (a
    read timeout or a dropped connection, which the Docker SDK lets through from ``requests``)."""
    import docker.errors
    import requests.exceptions

    return (docker.errors.APIError, requests.exceptions.RequestException)


def retry(fn: Callable[[], T], *, attempts: int = 3, backoff_s: float = 0.2) -> T:
    """Call ``fn`` (which must be safe to repeat) until it succeeds or fails for good.

    Only for idempotent daemon calls (inspect, create an exec, remove); never for starting a
    command, which may already have run. The last exception propagates unchanged.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            time.sleep(backoff_s * attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def daemon_error(what: str, exc: BaseException) -> SandboxError:
    """A one-line ``SandboxError`` for a daemon failure that retrying did not fix."""
    reason = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    reason = str(reason).strip().splitlines()[0]
    return SandboxError(f"{what} failed: {reason}")


def list_images(client: Any, filters: dict[str, Any], *, attempts: int = 5) -> list[Any]:
    """``client.images.list(filters=…)``, which inspects each image it lists: one removed by
    another process between the list and its inspection (a concurrent prune, another run's
    clean-up) is a 404 there, not an image of ours. List again; after ``attempts``, the 404 stands."""
    import docker.errors

    for attempt in range(attempts):
        try:
            return client.images.list(filters=filters)
        except docker.errors.ImageNotFound:
            if attempt == attempts - 1:
                raise
    return []
