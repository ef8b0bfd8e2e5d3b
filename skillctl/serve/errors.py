"""What went wrong in a request, independent of the API shape that reports it.

``ApiError`` carries an HTTP status and a one-line message; each API shape (``openai``,
``anthropic``) renders it as the JSON error body its SDK turns into a typed exception. Library
errors map by kind:

    NotFoundError           404   no such skill or version
    ImmutableVersionError   409   a published version would change
    UnsupportedError        400   the registry behind the server cannot do that
    SkillError, BundleError,
    VersionError            400   the upload or a parameter is wrong
    IntegrityError,
    RegistryError           502   the registry behind the server failed
    anything else           500   a fault of the server (its configuration, or a bug)
"""

from __future__ import annotations

from skillctl.errors import (
    BundleError,
    ImmutableVersionError,
    IntegrityError,
    NotFoundError,
    RegistryError,
    SkillctlError,
    SkillError,
    UnsupportedError,
    VersionError,
)


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param


def bad_request(message: str, *, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


_BY_KIND: tuple[tuple[type[SkillctlError], int], ...] = (
    (NotFoundError, 404),
    (ImmutableVersionError, 409),
    (UnsupportedError, 400),
    (IntegrityError, 502),
    (RegistryError, 502),
    (SkillError, 400),
    (BundleError, 400),
    (VersionError, 400),
)


def from_library(exc: SkillctlError) -> ApiError:
    status = next((code for kind, code in _BY_KIND if isinstance(exc, kind)), 500)
    return ApiError(status, str(exc))
