"""Skills published in a registry — a folder, an OCI registry or a well-known site — as a source.

``SourceSpec.location`` is the registry's URL as ``skillctl.registry.open_registry`` takes it and
``ref`` a version range (``latest`` when empty). The pin's ``revision`` is the registry's skill id,
``digest`` the artifact's own (what the registry serves and signatures cover), and ``extra`` what
finding the version again needs: a site's versioned index and the artifact's type, or an MCP
server's manifest (the digest of the file list its entry declares, refused before any file is read
when the server now declares another). On an MCP server a skill is (server, URI): ``subdir`` holds
the SKILL.md URI, the ref the spec resolves, so two skills with one name stay two. Registries are
opened when first needed, once per URL, through the ``opener`` the caller hands in (the CLI's
carries ``--insecure`` and credentials) and used as a run (``with registry:``: an OCI registry
then lists each skill's tags once and reads each version's manifest once, so resolving a pin and
fetching it is one manifest and one blob); ``close`` ends the runs and closes them.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Callable

from skillctl.bundle import BUNDLE, BundleContents, read_artifact, sha256_digest
from skillctl.errors import IntegrityError
from skillctl.protocols import RegistryReader, ResolvedSkill, SourcePin, SourceSpec


class RegistrySource:
    kind = "registry"

    def __init__(self, *, opener: Callable[[str], RegistryReader] | None = None) -> None:
        if opener is None:
            from skillctl.registry import open_registry

            def opener(url: str) -> RegistryReader:
                return open_registry(url, create=False)

        self._opener = opener
        self._open: dict[str, RegistryReader] = {}
        self._runs = ExitStack()  # every registry opened here, entered: one command's work is one run

    def registry(self, url: str) -> RegistryReader:
        """The registry at ``url``, opened once."""
        if url not in self._open:
            self._open[url] = self._runs.enter_context(self._opener(url))
        return self._open[url]

    def close(self) -> None:
        self._runs.close()  # leaves each run, which closes its registry
        self._open.clear()

    # ------------------------------------------------------------------ Source

    def discover(self, spec: SourceSpec, *, prereleases: bool = False) -> list[SourcePin]:
        if spec.name:
            return [self.resolve(spec, prereleases=prereleases)]
        reg = self.registry(spec.location)
        pins = []
        for record in reg.list_skills():
            pins.append(self.resolve(SourceSpec("registry", spec.location, spec.ref, name=record.name), prereleases=prereleases))
        return pins

    def resolve(self, spec: SourceSpec, *, prereleases: bool = False) -> SourcePin:
        rec = self.registry(spec.location).resolve(f"{spec.subdir or spec.name}@{spec.ref or 'latest'}", prereleases=prereleases)
        return pin_of_record(spec, rec)

    def fetch(self, pin: SourcePin) -> BundleContents:
        """The pinned version's files; ``IntegrityError`` when the registry now serves other bytes."""
        reg = self.registry(pin.spec.location)
        rec = self.resolved(pin)
        try:
            data = reg.fetch(rec)
        except IntegrityError as exc:
            raise IntegrityError(f"{pin.name}@{pin.version}: {exc}") from None
        if sha256_digest(data) != pin.digest:
            raise IntegrityError(f"{pin.name}@{pin.version}: fetched bytes do not match the pinned {pin.digest[:19]}…")
        return read_artifact(data, rec.artifact_type, expected_name=pin.name, source=f"{pin.name}@{pin.version}")

    def newest(self, spec: SourceSpec) -> SourcePin | None:
        return self.resolve(SourceSpec(spec.kind, spec.location, "latest", spec.subdir, spec.name))

    # ------------------------------------------------------------------ for trust and the runtime

    def resolved(self, pin: SourcePin) -> ResolvedSkill:
        """The registry's record for the pinned version, refused unless it has the pinned digest.

        Resolved by name and exact version, not by id: ids are per registry, and a pin must keep
        working against a mirror (``skillctl copy``) holding the same bytes. An MCP pin is resolved
        by its URI with its manifest, which the server refuses before reading a file if it changed."""
        reg = self.registry(pin.spec.location)
        manifest = pin.extra.get("manifest", "")
        if manifest:
            rec = reg.resolve(f"{pin.subdir or pin.revision}@{pin.version}", manifest=manifest)  # type: ignore[call-arg]
        else:
            rec = reg.resolve(f"{pin.name}@{pin.version}", index_url=pin.extra.get("index", ""))
        if rec.digest != pin.digest:
            raise IntegrityError(
                f"{pin.name}@{pin.version}: the registry now serves {rec.digest[:19]}… but skills.lock pins "
                f"{pin.digest[:19]}…; refusing — the version was changed behind your back"
            )
        return rec


def pin_of_record(spec: SourceSpec, rec: ResolvedSkill) -> SourcePin:
    extra: dict[str, Any] = {}
    if rec.index_url:
        extra["index"] = rec.index_url
    if rec.artifact_type != BUNDLE:
        extra["type"] = rec.artifact_type
    if rec.manifest:
        extra["manifest"] = rec.manifest
    named = SourceSpec(spec.kind, spec.location, spec.ref, spec.subdir, spec.name or rec.name)
    return SourcePin(named, rec.name, rec.version, rec.id, rec.digest, rec.tar_digest, rec.size,
                     subdir=rec.id if rec.manifest else spec.subdir, description=rec.description, extra=extra)


class Borrowed:
    """A registry the caller opened and will close, handed to a ``RegistrySource`` (whose
    ``close`` closes what its opener returns): everything but ``close`` goes to it."""

    def __init__(self, registry: RegistryReader) -> None:
        self._registry = registry

    def __getattr__(self, name: str) -> Any:
        return getattr(self._registry, name)

    def __enter__(self) -> "Borrowed":
        return self  # the caller's registry is in whatever run its owner started

    def __exit__(self, *exc: object) -> None:
        pass

    def close(self) -> None:
        pass
