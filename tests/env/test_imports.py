"""Undeclared imports: validate's SK251 on real skills, and `skillctl env infer`."""

from __future__ import annotations

import json

from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.skill import check_skill
from skillctl.env.imports import distribution_for

from .conftest import copy_skill, real_skill


def sk25x(report, code="SK251"):
    return [d for d in report.diagnostics if d.code == code]


def test_credit_risk_skill_imports_undeclared_scientific_packages():
    report = check_skill(real_skill("github+awesome-copilot", "datanalysis-credit-risk"))
    found = sk25x(report)
    by_file = {(d.file.split("datanalysis-credit-risk/")[1], d.line) for d in found}
    assert ("scripts/example.py", 9) in by_file  # import pandas as pd
    messages = " ".join(d.message for d in found)
    assert "imports 'sklearn'" in messages and "declare 'scikit-learn'" in messages
    assert "imports 'numpy'" in messages and "imports 'toad'" in messages
    # Its own modules (references/func.py, imported as references.func) are not third-party.
    assert "imports 'references'" not in messages
    assert all(d.severity == "warning" for d in found)


def test_eyeball_maps_import_names_to_distributions():
    messages = " ".join(d.message for d in sk25x(check_skill(real_skill("github+awesome-copilot", "eyeball"))))
    for module, dist in (("fitz", "PyMuPDF"), ("PIL", "Pillow"), ("docx", "python-docx")):
        assert f"imports '{module}'" in messages and f"declare '{dist}'" in messages
    assert "imports 'winreg'" not in messages  # standard library (on Windows), never a package


def test_declared_skills_and_local_modules_are_not_warned_about():
    for owner, name in (
        ("getsentry+skills", "skill-writer"),  # PEP 723: pyyaml provides yaml
        ("github+awesome-copilot", "convert-pdf-to-md"),  # requirements.txt: pymupdf provides fitz
        ("github+awesome-copilot", "mini-context-graph"),  # imports only its own modules
        ("github+awesome-copilot", "nano-banana-pro-openrouter"),  # PEP 723: openai
    ):
        assert sk25x(check_skill(real_skill(owner, name))) == [], name


def test_removing_the_declaration_brings_the_warning(tmp_path):
    skill = copy_skill(real_skill("getsentry+skills", "skill-writer"), tmp_path)
    script = skill / "scripts" / "quick_validate.py"
    script.write_text(script.read_text().replace('# dependencies = ["pyyaml"]', "# dependencies = []"))
    found = sk25x(check_skill(skill))
    assert [(d.line, d.column) for d in found] == [(25, 1)]
    assert "imports 'yaml'" in found[0].message and "declare 'PyYAML'" in found[0].message


def test_type_checking_imports_and_stdlib_are_ignored(tmp_path):
    skill = tmp_path / "quiet"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: quiet\ndescription: d\n---\nbody\n")
    (skill / "scripts" / "a.py").write_text(
        "#!/usr/bin/env python3\nfrom typing import TYPE_CHECKING\nimport json, sqlite3\n"
        "if TYPE_CHECKING:\n    import pandas\nfrom . import sibling\n"
    )
    assert sk25x(check_skill(skill)) == []


def test_an_unusable_requirements_txt_is_sk252(tmp_path):
    skill = copy_skill(real_skill("github+awesome-copilot", "convert-word-to-md"), tmp_path)
    (skill / "scripts" / "requirements.txt").write_text("-r ../other.txt\n")
    found = sk25x(check_skill(skill), "SK252")
    assert len(found) == 1 and "'-r' is not allowed" in found[0].message


def test_dotted_map_keys_win_over_their_top_level_name():
    assert distribution_for("google.protobuf.json_format") == "protobuf"
    assert distribution_for("yaml.constructor") == "PyYAML"
    assert distribution_for("somethingnew.sub") == "somethingnew"


def test_validate_prints_sk251_and_strict_fails_on_it():
    path = str(real_skill("github+awesome-copilot", "sql-server-table-reconciliation"))
    result = CliRunner().invoke(cli, ["validate", "--strict", path], catch_exceptions=False)
    assert result.exit_code == 1
    assert "SK251 warning imports 'mssql_python'" in result.output and "declare 'mssql-python'" in result.output


def test_env_infer_prints_a_pep723_block_to_paste():
    path = real_skill("github+awesome-copilot", "sql-server-table-reconciliation")
    result = CliRunner().invoke(cli, ["env", "infer", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        '# /// script\n# dependencies = [\n#     "mssql-python",\n#     "pandas",\n#     "pyarrow",\n# ]\n# ///\n'
    )
    as_json = CliRunner().invoke(cli, ["env", "infer", str(path), "--format", "json"], catch_exceptions=False)
    doc = json.loads(as_json.stdout)
    assert doc["missing"] == ["mssql-python", "pandas", "pyarrow"] and doc["declared"] == []


def test_env_infer_takes_a_published_skill_by_reference(tmp_path, monkeypatch):
    from skillctl.registry import open_registry
    from skillctl.registry.prepare import prepare_folder

    skill = copy_skill(real_skill("github+awesome-copilot", "sql-server-table-reconciliation"), tmp_path / "src")
    registry = tmp_path / "registry"
    with open_registry(str(registry), create=True) as reg:
        reg.publish(prepare_folder(skill, version="2.0.0"))  # a real skill, as it is: it declares no version
    monkeypatch.setenv("SKILLCTL_REGISTRY", str(registry))
    by_ref = CliRunner().invoke(cli, ["env", "infer", "sql-server-table-reconciliation", "--format", "json"], catch_exceptions=False)
    assert by_ref.exit_code == 0, by_ref.output
    assert json.loads(by_ref.stdout)["missing"] == ["mssql-python", "pandas", "pyarrow"]
    gone = CliRunner().invoke(cli, ["env", "infer", "no-such-skill"], catch_exceptions=False)
    assert gone.exit_code == 1 and "no-such-skill" in gone.output and "Traceback" not in gone.output
    folder = CliRunner().invoke(cli, ["env", "infer", "./not/a/folder"], catch_exceptions=False)
    assert folder.exit_code == 2 and "no such folder" in folder.output


def test_env_infer_keeps_what_is_declared_and_adds_what_is_missing(tmp_path):
    skill = copy_skill(real_skill("github+awesome-copilot", "convert-pdf-to-md"), tmp_path)
    (skill / "scripts" / "extra.py").write_text("import yaml\n")
    result = CliRunner().invoke(cli, ["env", "infer", str(skill), "--as", "requirements"], catch_exceptions=False)
    assert result.stdout.splitlines() == ["markitdown[pdf]>=0.1.0", "pymupdf>=1.24.0", "PyYAML"]


def test_env_show_lists_declarations_in_merge_order_with_their_sources(tmp_path):
    skill = copy_skill(real_skill("github+awesome-copilot", "convert-pdf-to-md"), tmp_path)
    (skill / "scripts" / "first.py").write_text('# /// script\n# requires-python = ">=3.10"\n# dependencies = ["pyyaml"]\n# ///\n')
    (tmp_path / "skills.yaml").write_text("skills: {}\nenvironment:\n  python: [numpy]\n  debian: [jq]\n")
    result = CliRunner().invoke(cli, ["env", "show", str(skill), "--requirements", str(tmp_path / "skills.yaml"),
                                      "--no-resolve", "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)["declared"]
    assert [(d["requirement"], d["owner"]) for d in doc["python"]] == [
        ("pyyaml", "convert-pdf-to-md"), ("markitdown[pdf]>=0.1.0", "convert-pdf-to-md"),
        ("pymupdf>=1.24.0", "convert-pdf-to-md"), ("numpy", "project"),
    ]
    assert doc["requires_python"][0]["requirement"] == ">=3.10" and doc["debian"][0]["requirement"] == "jq"
    bad = CliRunner().invoke(cli, ["env", "show", str(real_skill("github+awesome-copilot", "convert-pdf-to-md")),
                                   "--requirements", str(tmp_path / "nope.yaml"), "--no-resolve"])
    assert bad.exit_code == 2
