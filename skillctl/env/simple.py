"""Reading one project's page of a package index (PEP 503 HTML or PEP 691 JSON), download-free.

Only ``--allow-sdist`` needs it: uv resolves with building disabled, so when it reports a
package that has no usable wheel, skillctl itself finds that package's source distributions on
the index — file name, URL, sha256, ``requires-python``, yanked — and picks the version to build
in a container. Nothing here downloads a distribution or runs anything; the page is capped in
size and every link must carry a sha256.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urljoin, urlparse

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename
from packaging.version import Version

from skillctl.env.resolve import PackageFile, scrub, scrub_text
from skillctl.env.target import Target
from skillctl.errors import EnvError
from skillctl.nesting import loads_json

# PyPI's page for a project with thousands of files (numpy, boto3) is a few MB.
MAX_PAGE_BYTES = 32 * 1024 * 1024
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str
    requires_python: str
    yanked: bool
    size: int | None = None


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs))


def _files_from_html(text: str, page: str) -> list[IndexFile]:
    parser = _Links()
    parser.feed(text)
    out = []
    for link in parser.links:
        href = link.get("href")
        if not href:
            continue
        url, fragment = urldefrag(urljoin(page, href))
        algo, _, digest = fragment.partition("=")
        out.append(IndexFile(
            unquote(urlparse(url).path.rsplit("/", 1)[-1]), url, digest if algo == "sha256" else "",
            link.get("data-requires-python") or "", "data-yanked" in link,
        ))
    return out


def _files_from_json(doc: dict, page: str) -> list[IndexFile]:
    out = []
    for item in doc.get("files") or []:
        if not isinstance(item, dict):
            continue
        size = item.get("size")
        out.append(IndexFile(
            str(item.get("filename", "")), urljoin(page, str(item.get("url", ""))),
            str((item.get("hashes") or {}).get("sha256", "")), str(item.get("requires-python") or ""),
            bool(item.get("yanked")), int(size) if isinstance(size, int) else None,
        ))
    return out


def project_files(index: str, name: str) -> list[IndexFile]:
    """Every file the index lists for project ``name``."""
    import requests

    page = f"{index.rstrip('/')}/{canonicalize_name(name)}/"
    shown = scrub(page)  # messages never carry the index's credentials
    try:
        with requests.get(page, headers={"Accept": _ACCEPT}, stream=True, timeout=(10, 60)) as resp:
            if resp.status_code != 200:
                raise EnvError(f"the package index has no page for {name} ({shown}: HTTP {resp.status_code})")
            chunks, total = [], 0
            for chunk in resp.iter_content(1 << 16):
                chunks.append(chunk)
                total += len(chunk)
                if total > MAX_PAGE_BYTES:
                    raise EnvError(f"{shown} is larger than {MAX_PAGE_BYTES // 2**20} MB; refusing to read it")
            body = b"".join(chunks)
            ctype = resp.headers.get("Content-Type", "")
            final = resp.url or page
    except requests.RequestException as exc:
        raise EnvError(f"reading {shown} failed ({type(exc).__name__}: {scrub_text(str(exc))})") from None
    try:
        if "json" in ctype:
            return _files_from_json(loads_json(body), final)
        return _files_from_html(body.decode("utf-8", errors="replace"), final)
    except (ValueError, AttributeError) as exc:
        raise EnvError(f"{shown} is not a package index page ({exc})") from None


def _python_ok(requires_python: str, target: Target) -> bool:
    try:
        return not requires_python or SpecifierSet(requires_python).contains(target.python, prereleases=True)
    except InvalidSpecifier:
        return False  # a file whose bound cannot be read is not a candidate


def choose_sdist(index: str, name: str, wanted: SpecifierSet, target: Target) -> PackageFile:
    """The source distribution of ``name`` to build: the newest final release in ``wanted``
    (a pre-release only when nothing else fits), not yanked, admitting the target's Python,
    with a sha256 on the index. ``.tar.gz`` only (PEP 625)."""
    candidates: list[tuple[Version, IndexFile]] = []
    for f in project_files(index, name):
        if not f.filename.endswith(".tar.gz") or f.yanked or not _python_ok(f.requires_python, target):
            continue
        try:
            project, version = parse_sdist_filename(f.filename)
        except InvalidSdistFilename:
            continue
        if project == canonicalize_name(name) and wanted.contains(version, prereleases=True):
            candidates.append((version, f))
    finals = [c for c in candidates if not c[0].is_prerelease]
    pool = finals or candidates
    if not pool:
        bound = f" matching '{wanted}'" if str(wanted) else ""
        raise EnvError(
            f"{name} has no usable wheel and no source distribution (.tar.gz){bound} for Python {target.python} "
            "on the index"
        )
    version, best = max(pool, key=lambda c: c[0])
    if len(best.sha256) != 64:
        raise EnvError(f"the index lists {best.filename} without a sha256; refusing to download an unpinned file")
    return PackageFile(canonicalize_name(name), str(version), best.filename, scrub(best.url), best.sha256, best.size, "sdist")
