"""``/anthropic/v1/skills…``: the Anthropic skills API, as the ``anthropic`` SDK calls it
(``client.skills`` and ``client.beta.skills``; the client's ``base_url`` is ``…/anthropic``).

Routes, parameters and objects follow the SDK (``anthropic/resources/skills/``,
``anthropic/resources/beta/skills/``, ``anthropic/types/``):

    GET    /v1/skills                                 list (limit 1-1000, page, source)
    POST   /v1/skills                                 create (multipart files[], display_name)
    GET    /v1/skills/{skill_id}                      retrieve
    DELETE /v1/skills/{skill_id}                      delete
    GET    /v1/skills/{skill_id}/versions             list (limit, page)
    POST   /v1/skills/{skill_id}/versions             create (multipart files[])
    GET    /v1/skills/{skill_id}/versions/{version}   retrieve ({version}: id, number or latest)
    DELETE /v1/skills/{skill_id}/versions/{version}   delete
    GET    /v1/skills/{skill_id}/versions/{version}/content   the version's zip (beta download)
    POST   /v1/skills/{skill_id}/versions/{version}/yank|unyank   skillctl's addition

Objects: ``skill`` {id, type, display_name, latest_version_id, source: "custom", created_at,
updated_at (ISO 8601)}; ``skill_version`` {id, type, skill_id, name, description, created_at}
plus ``version`` (the SemVer string) and ``yanked``; lists {data, has_more, next_page}.
Errors: {"type": "error", "error": {type, message}, "request_id"} with a ``request-id``
header, typed as the SDK expects (invalid_request_error, authentication_error,
permission_error, not_found_error, request_too_large, api_error).

``display_name`` is checked (one line, at most 255 characters) but not stored: a skill here is
named by its SKILL.md ``name``, which every answer gives as ``display_name``. The
``anthropic-version``, ``anthropic-beta`` and ``anthropic-workspace-id`` headers are accepted and
change nothing; versions are not addressed by epoch timestamps.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from skillctl.errors import NotFoundError
from skillctl.protocols import Registry
from skillctl.registry.records import SkillRecord, VersionRecord
from skillctl.serve.context import ServeContext
from skillctl.serve.errors import ApiError, bad_request
from skillctl.serve.http import int_param, only_fields
from skillctl.serve.keys import ADMIN, PUBLISH, READ
from skillctl.serve.routes import ShapeRoutes
from skillctl.serve.service import page_after, version_id

PREFIX = "/anthropic/v1"
_ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
}
SOURCES = ("custom", "anthropic")


class AnthropicShape:
    request_id_header = "request-id"

    def error(self, err: ApiError, request_id: str) -> Response:
        kind = "api_error" if err.status >= 500 else _ERROR_TYPES.get(err.status, "invalid_request_error")
        body = {"type": "error", "error": {"type": kind, "message": err.message}, "request_id": request_id}
        # The SDKs retry 409s and 5xx unless told otherwise; a refusal (4xx) would only meet the
        # same answer again, while a 5xx (the registry behind the server unreachable) may pass.
        headers = {"x-should-retry": "false"} if err.status < 500 else {}
        if err.status == 401:
            headers["www-authenticate"] = "Bearer"
        return JSONResponse(body, status_code=err.status, headers=headers)


def iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def skill_object(s: SkillRecord, updated_at: int) -> dict[str, Any]:
    latest = s.latest_version or s.default_version
    return {
        "id": s.id,
        "type": "skill",
        "display_name": s.name,
        "latest_version_id": version_id(s.id, latest) if latest else None,
        "source": "custom",
        "created_at": iso(s.created_at),
        "updated_at": iso(updated_at),
    }


def version_object(r: VersionRecord) -> dict[str, Any]:
    return {
        "id": version_id(r.skill_id, r.version),
        "type": "skill_version",
        "skill_id": r.skill_id,
        "name": r.name,
        "description": r.description,
        "created_at": iso(r.created_at),
        "version": r.version,
        "yanked": r.yanked,
    }


def _updated(versions: list[VersionRecord], skill: SkillRecord) -> int:
    """A skill changes when a version is added: its newest publish time."""
    return max((r.created_at for r in versions), default=skill.created_at)


def _create_options(fields: dict[str, str]) -> dict[str, Any]:
    """``display_name`` is checked as the API defines it, and not stored (see the module docstring)."""
    only_fields(fields, "display_name")
    name = fields.get("display_name")
    if name is not None and (len(name) > 255 or "\n" in name or "\r" in name):
        raise bad_request("display_name must be a single line of at most 255 characters")
    return {}


def _page(data: list[dict[str, Any]], has_more: bool) -> JSONResponse:
    return JSONResponse({"data": data, "has_more": has_more, "next_page": data[-1]["id"] if has_more and data else None})


def routes(ctx: ServeContext) -> list[BaseRoute]:
    common = ShapeRoutes(ctx, AnthropicShape(), PREFIX, version_object)
    svc, run, at = ctx.service, ctx.workers.run, common.at

    async def full_skill(reg_ref: str) -> dict[str, Any]:
        skill, versions = await run(svc.versions, reg_ref)
        return skill_object(skill, _updated(versions, skill))

    def updated_times(reg: Registry, skills: list[SkillRecord]) -> list[int]:
        out = []
        for s in skills:
            try:
                out.append(_updated(reg.versions(s.id), s))
            except NotFoundError:  # deleted since the listing snapshot was taken
                out.append(s.created_at)
        return out

    async def list_skills(request: Request) -> Response:
        limit = int_param(request, "limit", 20, 1, 1000)
        source = request.query_params.get("source")
        if source is not None and source not in SOURCES:
            raise bad_request(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
        # Newest first. Every skill here is the team's own ("custom"), none is Anthropic's.
        skills = [] if source == "anthropic" else list(reversed(await run(svc.skills)))
        page = page_after(skills, lambda s: s.id, request.query_params.get("page"), limit, "page: skill")
        updated = await run(updated_times, page.items)
        return _page([skill_object(s, t) for s, t in zip(page.items, updated)], page.has_more)

    async def create_skill(request: Request) -> Response:
        skill, rec = await common.publish(request, None, _create_options)
        return JSONResponse(skill_object(skill, rec.created_at))

    async def retrieve_skill(request: Request) -> Response:
        return JSONResponse(await full_skill(request.path_params["skill_id"]))

    async def delete_skill(request: Request) -> Response:
        skill = await run(svc.remove_skill, request.path_params["skill_id"])
        return JSONResponse({"id": skill.id, "type": "skill_deleted"})

    async def list_versions(request: Request) -> Response:
        limit = int_param(request, "limit", 20, 1, 1000)
        _, versions = await run(svc.versions, request.path_params["skill_id"])  # newest first
        page = page_after(versions, lambda r: version_id(r.skill_id, r.version), request.query_params.get("page"), limit,
                          "page: version")
        return _page([version_object(r) for r in page.items], page.has_more)

    async def create_version(request: Request) -> Response:
        _, rec = await common.publish(request, request.path_params["skill_id"])
        return JSONResponse(version_object(rec))

    async def delete_version(request: Request) -> Response:
        rec = await run(svc.remove_version, request.path_params["skill_id"], request.path_params["version"])
        return JSONResponse({"id": version_id(rec.skill_id, rec.version), "type": "skill_version_deleted"})

    skill = "/skills/{skill_id}"
    return [
        at("/skills", READ, list_skills, ["GET"]),
        at("/skills", PUBLISH, create_skill, ["POST"]),
        at(skill, READ, retrieve_skill, ["GET"]),
        at(skill, ADMIN, delete_skill, ["DELETE"]),
        at(skill + "/versions", READ, list_versions, ["GET"]),
        at(skill + "/versions", PUBLISH, create_version, ["POST"]),
        *common.version_routes(delete_version),
    ]
