"""``skillctl eval``: run a skill's evals with and without it, grade, and report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, progress, refuse_token_stdin, registry_option
from skillctl.cli.many_options import MANY_KEYS, current_project, many_run_options, open_engine_for, run_settings


@click.command("eval")
@click.argument("skill", metavar="SKILL_DIR|REF")
@click.option("--baseline", default="none", show_default=True, metavar="none|VERSION|DIR",
              help="What the skill is compared with: no skill (without_skill), a published VERSION of it, or a "
                   "skill folder such as a snapshot of the previous version (both as old_skill).")
@click.option("--model", "model_spec", envvar="SKILLCTL_MODEL", required=True, metavar="SPEC",
              help="The agent's model: script:FILE, openai:MODEL, openai-chat:MODEL. Env: SKILLCTL_MODEL.")
@click.option("--judge", "judge_spec", metavar="SPEC",
              help="Model that grades expectations written as text (default: --model). It answers PASS/FAIL with evidence.")
@click.option("--judge-base-url", metavar="URL",
              help="OpenAI-compatible endpoint of the judge, when it is not the agent's (default: --base-url).")
@click.option("--runs-per-case", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs of each case in each configuration (run-1/…run-K/; stddev needs more than one).")
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path),
              help="The workspace folder (default: <skill>-workspace beside the skill folder, or here for a REF).")
@click.option("--allow-local-skills", is_flag=True,
              help="When skills.yaml here has a trust policy that requires signatures: evaluate skill folders "
                   "(SKILL_DIR, --baseline DIR) anyway — a folder cannot be signed. The policy's audit still applies.")
@many_run_options
@registry_option
@format_option
@library_errors
def eval_cmd(skill, baseline, model_spec, judge_spec, judge_base_url, runs_per_case, workspace, allow_local_skills,
             registry_url, fmt, **options) -> None:
    """Evaluate a skill: run each case of its evals/evals.json with and without it.

    SKILL_DIR is a skill folder (packed as it is now), REF a published skill (NAME[@VERSION]).
    Every run gets its own container with the case's files staged in its workspace; then each
    expectation is graded — a string by the judge model, an object {"text", "check"} by running
    the check command in the run's container (exit 0 = PASS). Results follow the Agent Skills
    layout: <skill>-workspace/iteration-N/eval-<id>/with_skill|without_skill|old_skill/
    {outputs/, timing.json, grading.json, transcript.jsonl}, benchmark.json, and report.html (a
    page with charts of pass rate and tokens per case). Progress per run on stderr; a table at
    the end (or the summary as JSON with --format json). Exit 1 when some run could not start.

    With a skills.yaml holding a 'trust:' section in the current folder, the skills of both
    configurations must pass it before any run starts (a folder only with --allow-local-skills
    when the policy requires signatures).
    """
    refuse_token_stdin("the runs of an eval")
    from skillctl.many.evals import EvalOptions, run_eval
    from skillctl.many.report import terminal_table

    o = {k: options[k] for k in MANY_KEYS}
    eval_options = EvalOptions(model=model_spec, judge=judge_spec, judge_base_url=judge_base_url, baseline=baseline,
                               runs_per_case=runs_per_case, workspace=workspace, settings=run_settings(registry_url, o),
                               project=current_project(), allow_local_skills=allow_local_skills)
    with open_engine_for(o) as engine:
        try:
            report = run_eval(skill, engine, eval_options, progress=progress)
        except KeyboardInterrupt:
            progress("interrupted: the runs were stopped and their containers removed; no benchmark was written")
            sys.exit(130)
    if fmt == "json":
        emit_json(report.to_dict())
    else:
        click.echo(terminal_table(report))
        progress(f"report: {report.iteration / 'report.html'}")
    sys.exit(report.exit_code)
