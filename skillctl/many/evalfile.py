"""``evals/evals.json``: a skill's test cases, in the shape the Agent Skills guide ("Evaluating
skills") defines — ``skill_name`` and ``evals[]`` of ``id``, ``prompt``, ``expected_output``,
``files``, ``expectations`` — checked against ``schemas/evals.schema.json`` (usable by editors).

Beyond the schema: ``skill_name`` must be the skill's name; ids are unique (they name the
folders ``eval-<id>``); every file is inside the skill folder and exists, and no two files of a
case share a name (inputs are staged into the workspace under their names). A case without
expectations is graded on its ``expected_output`` alone, by the judge. Every problem is
reported, in one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from skillctl.errors import ConfigError
from skillctl.schema import schema_problems, summarize
from skillctl.nesting import loads_json

from .inputfiles import MISSING, OUTSIDE, locate
from .job import Expectation

EVALS_FILE = "evals/evals.json"


@lru_cache(maxsize=1)
def evals_schema() -> dict[str, Any]:
    return json.loads(resources.files("skillctl.many").joinpath("schemas/evals.schema.json").read_text("utf-8"))


@dataclass(frozen=True)
class EvalCase:
    id: int | str
    prompt: str
    expected_output: str = ""
    files: tuple[str, ...] = ()
    expectations: tuple[Expectation, ...] = ()

    @property
    def name(self) -> str:
        """The case's folder in an iteration, as the guide lays it out."""
        return f"eval-{self.id}"

    @property
    def graded(self) -> tuple[Expectation, ...]:
        """What is graded: the expectations, or else the expected output itself."""
        return self.expectations or (Expectation(self.expected_output),)

    def to_dict(self) -> dict[str, Any]:
        return {"eval_id": self.id, "eval_name": self.name, "prompt": self.prompt,
                "expected_output": self.expected_output, "files": list(self.files),
                "expectations": [e.to_json() for e in self.expectations]}


@dataclass(frozen=True)
class EvalSet:
    skill_name: str
    cases: tuple[EvalCase, ...]
    path: Path


def load_evals(skill_dir: Path, skill_name: str) -> EvalSet:
    """The test cases of the skill in ``skill_dir`` (named ``skill_name``)."""
    path = skill_dir / EVALS_FILE
    if not path.is_file():
        raise ConfigError(f"{path} does not exist; write the skill's test cases there "
                          f"({{\"skill_name\": \"{skill_name}\", \"evals\": [{{\"id\": 1, \"prompt\": ..., \"expected_output\": ...}}]}})")
    try:
        data = loads_json(path.read_text("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    problems = schema_problems(data, evals_schema())
    if problems:
        raise ConfigError(f"{path}: {summarize(problems)}")
    if data["skill_name"] != skill_name:
        problems.append(f"skill_name is {data['skill_name']!r} but the skill is named {skill_name!r}")
    cases = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(data["evals"]):
        key = str(raw["id"])
        if key in seen:
            problems.append(f"evals[{i}]: id {raw['id']!r} is already used by evals[{seen[key]}]")
        seen.setdefault(key, i)
        problems += _file_problems(skill_dir, i, raw.get("files", []))
        expectations = tuple(Expectation(e) if isinstance(e, str) else Expectation(e["text"], e["check"])
                             for e in raw.get("expectations", []))
        if not expectations and not raw.get("expected_output", "").strip():
            problems.append(f"evals[{i}]: nothing to grade; add expectations or an expected_output")
        cases.append(EvalCase(raw["id"], raw["prompt"], raw.get("expected_output", ""), tuple(raw.get("files", [])),
                              expectations))
    if problems:
        raise ConfigError(f"{path}: {summarize(problems)}")
    return EvalSet(skill_name, tuple(cases), path)


def _file_problems(skill_dir: Path, index: int, files: list[str]) -> list[str]:
    problems = []
    names: dict[str, str] = {}
    for j, name in enumerate(files):
        where = f"evals[{index}].files[{j}]"
        _, problem = locate(skill_dir, name)
        if problem == OUTSIDE:
            problems.append(f"{where}: {name} must be a path inside the skill folder, relative to it")
            continue
        if problem == MISSING:
            problems.append(f"{where}: {name} does not exist in {skill_dir}")
            continue
        pure = PurePosixPath(name)
        if pure.name in names:
            problems.append(f"{where}: {name} and {names[pure.name]} would both be staged as {pure.name}; rename one")
        names[pure.name] = name
    return problems
