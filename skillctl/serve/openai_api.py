"""``/openai/v1/skills…``: the OpenAI skills API, as the ``openai`` SDK calls it.

Routes, parameters and objects follow the SDK (``openai/resources/skills/``, ``openai/types/``):

    GET    /skills                                   list (after, limit 1-100, order asc|desc)
    POST   /skills                                   create (multipart files[] or one zip)
    GET    /skills/{skill_id}                        retrieve
    POST   /skills/{skill_id}                        update (JSON default_version)
    DELETE /skills/{skill_id}                        delete
    GET    /skills/{skill_id}/content                the default version's zip
    GET    /skills/{skill_id}/versions               list (after = a version id, limit, order)
    POST   /skills/{skill_id}/versions               create (multipart files, default)
    GET    /skills/{skill_id}/versions/{version}     retrieve ({version}: number, id or latest)
    DELETE /skills/{skill_id}/versions/{version}     delete
    GET    /skills/{skill_id}/versions/{version}/content   that version's zip
    POST   /skills/{skill_id}/versions/{version}/yank|unyank   skillctl's addition (JSON reason)

Objects: ``skill`` {id, object, name, description, created_at (unix seconds), default_version,
latest_version}; ``skill.version`` {id, object, skill_id, version, name, description,
created_at} plus ``yanked``; lists {object: "list", data, first_id, last_id, has_more}.
Errors: {"error": {message, type, param, code}} with the status the SDK maps to its typed
exception (400 BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError, 404
NotFoundError, 409 ConflictError, 413, 5xx InternalServerError), and ``x-should-retry: false``
on every refusal the same request would meet again (the SDK retries 409 and 5xx otherwise).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from skillctl.registry.records import SkillRecord, VersionRecord
from skillctl.serve.context import ServeContext
from skillctl.serve.errors import ApiError, bad_request
from skillctl.serve.http import form_flag, int_param, only_fields, read_json
from skillctl.serve.keys import ADMIN, PUBLISH, READ
from skillctl.serve.routes import ShapeRoutes, zip_response
from skillctl.serve.service import page_after, version_id

PREFIX = "/openai/v1"
_ERROR_TYPES = {401: "invalid_request_error", 403: "invalid_request_error", 404: "invalid_request_error"}


class OpenAIShape:
    request_id_header = "x-request-id"

    def error(self, err: ApiError, request_id: str) -> Response:
        kind = "server_error" if err.status >= 500 else _ERROR_TYPES.get(err.status, "invalid_request_error")
        body = {"error": {"message": err.message, "type": kind, "param": err.param, "code": err.code}}
        # The SDKs retry 409s and 5xx unless told otherwise; a refusal (4xx) would only meet the
        # same answer again, while a 5xx (the registry behind the server unreachable) may pass.
        headers = {"x-should-retry": "false"} if err.status < 500 else {}
        if err.status == 401:
            headers["www-authenticate"] = "Bearer"
        return JSONResponse(body, status_code=err.status, headers=headers)


def skill_object(s: SkillRecord) -> dict[str, Any]:
    return {
        "id": s.id,
        "object": "skill",
        "name": s.name,
        "description": s.description,
        "created_at": s.created_at,
        "default_version": s.default_version or s.latest_version,
        "latest_version": s.latest_version,
    }


def version_object(r: VersionRecord) -> dict[str, Any]:
    return {
        "id": version_id(r.skill_id, r.version),
        "object": "skill.version",
        "skill_id": r.skill_id,
        "version": r.version,
        "name": r.name,
        "description": r.description,
        "created_at": r.created_at,
        "yanked": r.yanked,
    }


def _list(data: list[dict[str, Any]], has_more: bool) -> JSONResponse:
    return JSONResponse({
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": has_more,
    })


def _order(request: Request) -> str:
    order = request.query_params.get("order", "desc")
    if order not in ("asc", "desc"):
        raise bad_request(f"order must be 'asc' or 'desc', got {order!r}", param="order")
    return order


def routes(ctx: ServeContext) -> list[BaseRoute]:
    common = ShapeRoutes(ctx, OpenAIShape(), PREFIX, version_object)
    svc, run, at = ctx.service, ctx.workers.run, common.at

    async def list_skills(request: Request) -> Response:
        limit = int_param(request, "limit", 20, 1, 100)
        order = _order(request)
        skills = await run(svc.skills)
        ordered = skills if order == "asc" else list(reversed(skills))
        page = page_after(ordered, lambda s: s.id, request.query_params.get("after"), limit, "after: skill")
        return _list([skill_object(s) for s in page.items], page.has_more)

    async def create_skill(request: Request) -> Response:
        skill, _ = await common.publish(request, None)
        return JSONResponse(skill_object(skill))

    async def retrieve_skill(request: Request) -> Response:
        return JSONResponse(skill_object(await run(svc.skill, request.path_params["skill_id"])))

    async def update_skill(request: Request) -> Response:
        doc = await read_json(request, ctx.body_pace)
        default = doc.get("default_version")
        if not isinstance(default, str) or not default:
            raise bad_request("default_version is required: the version to make the default", param="default_version")
        return JSONResponse(skill_object(await run(svc.check_default, request.path_params["skill_id"], default)))

    async def delete_skill(request: Request) -> Response:
        skill = await run(svc.remove_skill, request.path_params["skill_id"])
        return JSONResponse({"id": skill.id, "object": "skill.deleted", "deleted": True})

    async def skill_content(request: Request) -> Response:
        rec, data = await run(svc.download, request.path_params["skill_id"], None)
        return zip_response(rec, data)

    async def list_versions(request: Request) -> Response:
        limit = int_param(request, "limit", 20, 1, 100)
        order = _order(request)
        _, versions = await run(svc.versions, request.path_params["skill_id"])  # newest first
        ordered = versions if order == "desc" else list(reversed(versions))
        page = page_after(ordered, lambda r: version_id(r.skill_id, r.version), request.query_params.get("after"), limit,
                          "after: version")
        return _list([version_object(r) for r in page.items], page.has_more)

    async def create_version(request: Request) -> Response:
        def options(fields: dict[str, str]) -> dict[str, Any]:
            only_fields(fields, "default")
            return {"default": form_flag(fields, "default")}

        _, rec = await common.publish(request, request.path_params["skill_id"], options)
        return JSONResponse(version_object(rec))

    async def delete_version(request: Request) -> Response:
        rec = await run(svc.remove_version, request.path_params["skill_id"], request.path_params["version"])
        return JSONResponse({"id": version_id(rec.skill_id, rec.version), "object": "skill.version.deleted", "deleted": True,
                             "version": rec.version})

    skill = "/skills/{skill_id}"
    return [
        at("/skills", READ, list_skills, ["GET"]),
        at("/skills", PUBLISH, create_skill, ["POST"]),
        at(skill, READ, retrieve_skill, ["GET"]),
        at(skill, PUBLISH, update_skill, ["POST"]),
        at(skill, ADMIN, delete_skill, ["DELETE"]),
        at(skill + "/content", READ, skill_content, ["GET"]),
        at(skill + "/versions", READ, list_versions, ["GET"]),
        at(skill + "/versions", PUBLISH, create_version, ["POST"]),
        *common.version_routes(delete_version),
    ]
