"""The commands end to end through click: ``site build`` from a registry and from skill folders,
then every read command against the served site (list, versions, show, pull, lock, install
--frozen, catalog, export, run, copy), and the one-line failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from skillctl.cli import cli

from .conftest import WK
from .server import SiteServer, reply

REPO = Path(__file__).resolve().parents[2]
NOTES = REPO / "examples" / "demo" / "notes.txt"


def run(*args: object, ok: bool = True, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)
    assert "Traceback" not in result.output
    assert result.exit_code == (0 if ok else 1), result.output
    return result


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def examples_site(tmp_path: Path) -> Path:
    """The repository's example skills, published to a registry and built into a site by the CLI."""
    reg = tmp_path / "reg"
    run("publish", REPO / "skills", "--registry", reg)
    out = tmp_path / "site"
    result = run("site", "build", out, "--registry", reg, "--format", "json")
    report = json.loads(result.stdout)
    assert report["skills"] == 4 and report["unchanged"] == 0
    assert "added tally@1.0.0" in result.stderr
    again = json.loads(run("site", "build", out, "--registry", reg, "--format", "json").stdout)
    assert again["written"] == [] and again["unchanged"] == len(report["written"])
    return out


@pytest.fixture
def site(examples_site: Path):
    with SiteServer(examples_site) as srv:
        yield srv


def test_site_build_from_skill_folders(tmp_path: Path):
    result = run("site", "build", tmp_path / "out", REPO / "skills" / "tally")
    assert "1 skill, 1 version; 4 files written" in result.stdout
    index = json.loads((tmp_path / "out" / WK / "index.json").read_text())
    assert [e["name"] for e in index["skills"]] == ["tally"]


def test_site_build_wants_folders_or_a_registry_not_both(tmp_path: Path):
    result = CliRunner().invoke(cli, ["site", "build", str(tmp_path / "o"), str(REPO / "skills"), "--registry", str(tmp_path)])
    assert result.exit_code == 2 and "not both" in result.output


def test_site_build_from_a_missing_registry_is_one_line(tmp_path: Path):
    result = run("site", "build", tmp_path / "o", "--registry", tmp_path / "nothing", ok=False)
    assert "no registry at" in error_line(result)


def test_read_commands_against_the_site(site: SiteServer, tmp_path: Path):
    r = ("--registry", site.url, "--insecure")
    listed = json.loads(run("list", *r, "--format", "json").stdout)
    assert [s["name"] for s in listed] == ["csv-sql", "find-excerpts", "json-shape", "tally"]
    versions = json.loads(run("versions", "tally", *r, "--format", "json").stdout)
    assert versions[0]["version"] == "1.0.0" and versions[0]["artifact_type"] == "archive"
    shown = run("show", "tally@^1", *r).stdout
    assert "index:       " + site.url + f"/{WK}/tally/v1.0.0/index.json" in shown and "published:   unknown" in shown
    pulled = json.loads(run("pull", "tally", "-o", tmp_path / "pulled", *r, "--format", "json").stdout)
    assert Path(pulled["path"], "scripts", "tally.py").read_bytes() == (REPO / "skills/tally/scripts/tally.py").read_bytes()
    catalog = run("catalog", "tally", "csv-sql", *r).stdout
    assert "<name>tally</name>" in catalog and "<location>/skills/csv-sql/SKILL.md</location>" in catalog
    exported = json.loads(run("export", "tally", "-o", tmp_path / "agents", *r, "--format", "json").stdout)
    assert Path(exported[0]["path"], "SKILL.md").exists()


def test_lock_and_frozen_install_from_the_site(site: SiteServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SKILLCTL_INSECURE", "1")
    (tmp_path / "skills.yaml").write_text("skills:\n  tally: ^1\n  csv-sql: '~1.1'\n")
    run("lock", "--registry", site.url)
    lock = json.loads((tmp_path / "skills.lock").read_text())
    assert lock["skills"]["tally"]["index"] == f"{site.url}/{WK}/tally/v1.0.0/index.json"
    assert lock["skills"]["tally"]["type"] == "archive"
    site.clear()
    run("install", "--frozen", "--registry", site.url)
    assert sorted(p.name for p in (tmp_path / ".agents" / "skills").iterdir()) == ["csv-sql", "tally"]
    assert f"/{WK}/index.json" not in site.requests()


def test_run_loads_skills_from_the_site(site: SiteServer, tmp_path: Path):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [
        {"shell": ['head -3 "$SKILLS_DIR/tally/SKILL.md"']},
        {"answer": "read it"},
    ]}))
    result = CliRunner().invoke(
        cli,
        ["run", "--skill", "tally", "--registry", site.url, "--insecure", "--sandbox", "local", "--allow-unsafe-local",
         "--model", f"script:{script}", "--transcript", str(tmp_path / "t.jsonl"), "--format", "json", "count"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["answer"] == "read it"
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert any("name: tally" in json.dumps(r) for r in records)


def test_copy_from_the_site_into_a_folder_registry_keeps_the_original(site: SiteServer, tmp_path: Path):
    mirror = tmp_path / "mirror"
    out = json.loads(run("copy", "tally", "--from", site.url, "--to", mirror, "--insecure", "--format", "json").stdout)
    assert out[0]["status"] == "published" and out[0]["origin_digest"].startswith("sha256:")
    again = json.loads(run("copy", "tally", "--from", site.url, "--to", mirror, "--insecure", "--format", "json").stdout)
    assert again[0]["status"] == "unchanged"
    shown = json.loads(run("show", "tally", "--registry", mirror, "--format", "json").stdout)["resolved"]
    assert shown["mirrored_from"] == {"url": f"{site.url}/{WK}/tally/v1.0.0/tally.tar.gz", "digest": out[0]["origin_digest"]}
    # the files at the archive root became the same canonical bundle the source registry holds
    original = json.loads(run("show", "tally", "--registry", tmp_path / "reg", "--format", "json").stdout)["resolved"]
    assert shown["digest"] == original["digest"]


def test_copy_to_a_site_is_refused(site: SiteServer, tmp_path: Path):
    result = run("copy", "tally", "--from", tmp_path / "reg", "--to", site.url, "--insecure", ok=False)
    assert "read-only" in result.stderr


def test_unknown_types_warn_on_stderr_and_json_stays_clean(site: SiteServer, examples_site: Path):
    index = json.loads((examples_site / WK / "index.json").read_text())
    index["skills"].append({"name": "later", "type": "mcp-resource", "description": "d", "url": "x", "digest": "sha256:" + "0" * 64})
    site.routes[f"/{WK}/index.json"] = lambda h: reply(h, 200, json.dumps(index).encode(), {"Content-Type": "application/json"})
    result = run("list", "--registry", site.url, "--insecure", "--format", "json")
    assert len(json.loads(result.stdout)) == 4
    assert "warning:" in result.stderr and "unknown type 'mcp-resource'" in result.stderr


DEEP = b"[" * 200_000 + b"]" * 200_000  # 400 KB: under the size caps, far past the parser's recursion limit


def test_documents_nested_too_deeply_are_one_line(site: SiteServer, tmp_path: Path):
    deep = lambda h: reply(h, 200, b'{"skills": ' + DEEP + b"}", {"Content-Type": "application/json"})  # noqa: E731
    site.routes[f"/{WK}/tally/versions.json"] = deep
    assert "nested too deeply: over 64 levels" in error_line(run("versions", "tally", "--registry", site.url, "--insecure",
                                                                  ok=False))
    site.routes[f"/{WK}/index.json"] = deep
    for command in (["list"], ["show", "tally"], ["pull", "tally", "-o", tmp_path / "out"]):
        result = run(*command, "--registry", site.url, "--insecure", ok=False)
        assert "index.json is not valid JSON (nested too deeply: over 64 levels, at line 1, column 75)" in error_line(result)
    assert not (tmp_path / "out").exists()


def test_failures_are_one_line(site: SiteServer, examples_site: Path):
    result = run("list", "--registry", site.url, ok=False)
    assert "plain http" in error_line(result) and "--insecure" in error_line(result)
    site.routes[f"/{WK}/index.json"] = lambda h: reply(h, 200, json.dumps({"$schema": "https://example.com/v9", "skills": []}).encode())
    result = run("list", "--registry", site.url, "--insecure", ok=False)
    assert "does not know" in error_line(result)
    result = run("yank", "tally@1.0.0", "--registry", site.url, "--insecure", ok=False)
    assert "read-only" in error_line(result)
