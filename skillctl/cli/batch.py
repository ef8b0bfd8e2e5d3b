"""``skillctl batch``: one agent run per line of a JSON Lines file, in parallel, resumable."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, progress, refuse_token_stdin, registry_option
from skillctl.cli.many_options import MANY_KEYS, current_project, many_run_options, open_engine_for, run_settings


@click.command("batch")
@click.argument("tasks", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "results", type=click.Path(dir_okay=False, path_type=Path),
              help="Results file (JSON Lines, appended as runs finish). Default: TASKS.results.jsonl beside TASKS.")
@click.option("--model", "model_spec", envvar="SKILLCTL_MODEL", metavar="SPEC",
              help="Model for lines without one: script:FILE, openai:MODEL, openai-chat:MODEL. Env: SKILLCTL_MODEL.")
@click.option("--allow-outside-files", is_flag=True,
              help="Stage files a line names outside the tasks file's folder (absolute paths, '..', links out of it); "
              "without it such a line is refused, as eval refuses them, since staged files reach the transcript.")
@click.option("--retry-failed", is_flag=True,
              help="Also run again the lines whose last result says the run did not happen (failed to start, "
              "an error, every attempt lost); the others stay done.")
@many_run_options
@registry_option
@format_option
@library_errors
def batch_cmd(tasks, results, model_spec, allow_outside_files, retry_failed, registry_url, fmt, **options) -> None:
    """Run every task of TASKS (JSON Lines) as its own agent run, several at once.

    Each line: {"task": "...", "id": "...", "skills": ["REF", ...], "files": ["PATH", ...],
    "model": "SPEC"} — only "task" is required; files are relative to TASKS and must be inside
    its folder (unless --allow-outside-files); a line without "id" gets a hash of its content.
    Every line is checked first; bad lines are reported with their numbers and nothing runs.

    Each finished run appends one line to the results (id, outcome, answer, steps K, Z,
    duration, transcript path, retries); transcripts go to RESULTS.transcripts/. Running the
    same command again skips ids already in the results, so an interrupted batch resumes;
    with --retry-failed it also reruns the lines that did not run (their new result is appended).
    Ctrl-C stops the runs and removes their containers (exit 130). Exit 1 when some run could
    not start (see its message), else 0 — each run's own outcome is in the results.

    With a skills.yaml holding a 'trust:' section in the current folder, every skill the lines
    name must pass it before any run starts; the runs then load exactly the versions checked.
    """
    refuse_token_stdin("the runs of a batch")
    from skillctl.many.batch import read_tasks, run_batch

    o = {k: options[k] for k in MANY_KEYS}
    settings = run_settings(registry_url, o)
    # Every line checked before an engine starts (Ray would start a cluster first).
    read_tasks(tasks, default_model=model_spec or None, allow_outside_files=allow_outside_files)
    with open_engine_for(o) as engine:
        try:
            summary = run_batch(tasks, engine, results_path=results, model=model_spec or None, settings=settings,
                                progress=progress, project=current_project(),
                                allow_outside_files=allow_outside_files, retry_failed=retry_failed)
        except KeyboardInterrupt:
            progress("interrupted: finished runs are in the results; run the same command again to resume")
            sys.exit(130)
    if fmt == "json":
        emit_json(summary.to_dict())
    else:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(summary.outcomes.items())) or "nothing to run"
        retried = f"; {summary.retried} retried" if summary.retried else ""
        progress(f"batch {summary.batch_id}: {counts}{retried}; {summary.skipped} skipped (already done); "
                 f"results in {summary.results_path}")
    sys.exit(summary.exit_code)
