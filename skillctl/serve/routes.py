"""What the two API shapes' routes have in common: the route table's plumbing and the handlers
that differ only in the object they answer with."""

from __future__ import annotations

from typing import Any, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from skillctl.registry.records import SkillRecord, VersionRecord
from skillctl.serve.context import ServeContext
from skillctl.serve.errors import bad_request
from skillctl.serve.http import Handler, Shape, endpoint, not_routed, only_fields, read_json, read_upload
from skillctl.serve.keys import ADMIN, READ

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


def zip_response(rec: VersionRecord, data: bytes) -> Response:
    return Response(data, media_type="application/zip", headers={
        "content-disposition": f'attachment; filename="{rec.name}-{rec.version}.zip"',
    })


def no_fields(fields: dict[str, str]) -> dict[str, Any]:
    """An upload whose form holds nothing but files."""
    only_fields(fields)
    return {}


class ShapeRoutes:
    """Routes under ``prefix`` answering in ``shape``; ``version_object`` renders a version."""

    def __init__(self, ctx: ServeContext, shape: Shape, prefix: str, version_object: Callable[[VersionRecord], dict[str, Any]]) -> None:
        self.ctx = ctx
        self.shape = shape
        self.prefix = prefix
        self.version_object = version_object

    def at(self, path: str, scope: str, handler: Handler, methods: list[str]) -> Route:
        return Route(self.prefix + path, endpoint(self.shape, self.ctx.access, scope, handler), methods=methods)

    def version_routes(self, delete_version: Handler) -> list[Route]:
        """The routes of one version, and last, a 404 in the shape's words for anything else
        under the prefix."""
        version = "/skills/{skill_id}/versions/{version}"
        return [
            self.at(version, READ, self.retrieve_version, ["GET"]),
            self.at(version, ADMIN, delete_version, ["DELETE"]),
            self.at(version + "/content", READ, self.version_content, ["GET"]),
            self.at(version + "/yank", ADMIN, self.yank(True), ["POST"]),
            self.at(version + "/unyank", ADMIN, self.yank(False), ["POST"]),
            Route(self.prefix + "/{rest:path}", not_routed(self.shape), methods=ALL_METHODS),
        ]

    async def publish(
        self, request: Request, into: str | None, options: Callable[[dict[str, str]], dict[str, Any]] = no_fields
    ) -> tuple[SkillRecord, VersionRecord]:
        """Read an upload and publish it (as a new skill when ``into`` is None). ``options``
        checks the form's other fields and turns them into ``SkillService.publish`` options.
        At most ``upload_slots`` uploads are held in memory at once; the others wait, their
        bodies unread. A body that stalls gives its slot up at ``body_pace``'s deadline (408)."""
        async with self.ctx.upload_slots:
            upload, fields = await read_upload(request, self.ctx.max_request_bytes, self.ctx.limits.max_files, self.ctx.body_pace)
            return await self.ctx.workers.run(self.ctx.service.publish, upload, into=into, **options(fields))

    async def retrieve_version(self, request: Request) -> Response:
        svc = self.ctx.service
        _, rec = await self.ctx.workers.run(svc.version, request.path_params["skill_id"], request.path_params["version"])
        return JSONResponse(self.version_object(rec))

    async def version_content(self, request: Request) -> Response:
        svc = self.ctx.service
        rec, data = await self.ctx.workers.run(svc.download, request.path_params["skill_id"], request.path_params["version"])
        return zip_response(rec, data)

    def yank(self, yanked: bool) -> Handler:
        """``POST …/versions/{version}/yank`` (JSON ``{"reason": …}``) or ``…/unyank``."""

        async def handler(request: Request) -> Response:
            reason = (await read_json(request, self.ctx.body_pace)).get("reason", "") if yanked else ""
            if not isinstance(reason, str):
                raise bad_request("reason must be a string", param="reason")
            svc = self.ctx.service
            rec = await self.ctx.workers.run(svc.set_yanked, request.path_params["skill_id"], request.path_params["version"],
                                             yanked, reason)
            return JSONResponse(self.version_object(rec))

        return handler
