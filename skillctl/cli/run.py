"""``skillctl run``: load pinned skills into a sandbox and let a model work through a shell."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skillctl.cli.egress_options import egress_options, egress_spec
from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, output_option, progress, registry_option
from skillctl.cli.run_options import run_options, sandbox_settings


@click.command("run")
@click.argument("task")
@click.option("--skill", "skills", multiple=True, metavar="REF", help="Skill to load (NAME, NAME@RANGE, skill_ID[@VERSION]); repeatable.")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Load every skill pinned in this skills.lock (digests enforced).")
@click.option("--model", "model_spec", envvar="SKILLCTL_MODEL", required=True, metavar="SPEC", help="script:FILE, openai:MODEL or openai-chat:MODEL. Env: SKILLCTL_MODEL.")
@click.option("--input", "inputs", multiple=True, type=click.Path(exists=True, path_type=Path), help="File or folder staged into the workspace before the run; repeatable.")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Approval policy file (YAML rules: pattern → allow|ask|deny).")
@click.option("--keep-background", is_flag=True, help="Let processes a command leaves running with their output redirected (nohup srv > log 2>&1 &) outlive it, e.g. a server for later steps. Default: everything a command started is killed when it ends. Docker sandbox only.")
@click.option("--index-url", envvar="SKILLCTL_INDEX_URL", metavar="URL", help="Package index for the skills' declared requirements. Env: SKILLCTL_INDEX_URL (else UV_INDEX_URL, PIP_INDEX_URL, PyPI).")
@click.option("--extra-index-url", "extra_index_urls", multiple=True, envvar="SKILLCTL_EXTRA_INDEX_URL", metavar="URL", help="Another package index; repeatable (searched before --index-url, as uv does). Env: SKILLCTL_EXTRA_INDEX_URL (space-separated).")
@click.option("--allow-sdist", is_flag=True, help="Accept source distributions where no wheel fits (built in a throwaway container, never here).")
@click.option("--isolate-env", "isolate_env", multiple=True, metavar="SKILL", help="Give SKILL a Python environment of its own (a venv its scripts run with) instead of the one all skills share: for a skill the merge holds back (the run warns \"skill S: P X alone → Y with the others\"); repeatable. skills.yaml: environment: isolate: [SKILL] or auto.")
@click.option("--ignore-requires-python", "ignore_requires_python", multiple=True, metavar="SKILL", help="Load SKILL although its requires-python excludes the agent image's Python (its scripts run there all the same); repeatable. A lock's and skills.yaml's lists add to it.")
@click.option("--catalog-budget", type=click.IntRange(min=200), help="Characters the skills catalog may take in the first context (default: 2 % of --context-budget, i.e. 8,000 for 100k tokens).")
@click.option("--compact", is_flag=True, help="When clearing old tool results is not enough, let the model summarise the oldest part of the conversation instead of dropping it (costs extra model calls).")
@click.option("--subagents", is_flag=True, help="Offer the model a `subagent` tool: a fresh-context agent run on a sub-task whose final answer alone comes back.")
@click.option("--memory", "memory", metavar="NAME|DIR", help="Long-term memory that outlives the run: a NAME (kept in the user data folder) or a folder path such as ./notes. The agent finds it at /memory and the first context shows the first lines of its MEMORY.md; one run at a time per memory. See `skillctl memory`.")
@output_option("output_dir", help="After the run, copy the sandbox's working folder here (hard links become separate files; symbolic links and special files are skipped; exit 10 if the copy fails).")
@click.option("--transcript", "transcript_path", type=click.Path(dir_okay=False, path_type=Path), help="JSON Lines file for the full run record (default: in the user state folder).")
@run_options
@egress_options
@registry_option
@format_option
@library_errors
def run_cmd(task, skills, lock_path, model_spec, base_url, inputs, max_steps, max_seconds, max_tokens, context_budget,
            timeout_ms, approve, policy_path, sandbox_name, allow_unsafe_local, keep_background, image, index_url, extra_index_urls,
            allow_sdist, isolate_env, ignore_requires_python,
            memory_limit, cpus, catalog_budget, compact, subagents, memory, output_dir, transcript_path, registry_url,
            fmt) -> None:
    """Run an agent on TASK with the given skills loaded into a sandbox.

    Order: resolve the skills (metadata), start a locked-down container, copy each verified
    bundle to /skills/NAME/, put the skills catalog in the first context, then loop: the model
    proposes shell commands, the harness runs (or refuses) them, until a final answer or a budget.
    Progress goes to stderr; the answer to stdout. Exit 0 for an answer; otherwise the outcome's
    code: 3 steps, 4 time, 5 tokens, 6 invalid calls, 7 context too long, 8 model error,
    9 sandbox error, 130 interrupted; 10 when the run answered but --output could not be written
    (the answer is printed all the same).

    Network is off unless a policy allows domains (--allow-domain, --network-policy, or
    'network:' in skills.yaml); then HTTP(S) goes only through an egress proxy that enforces
    it, injects secrets for their domains (the container sees placeholders) and logs every
    request. Secrets that skills.yaml names are used only with --project-secrets.

    The project's skills.yaml (beside --lock, else in the current folder) with a 'trust:'
    section: every skill the run loads must pass it, those named with --skill too.
    """
    from skillctl.project.spec import project_file
    from skillctl.runtime import RunSpec, run

    settings = sandbox_settings(memory_limit, cpus, keep_background=keep_background or None)
    network = egress_spec(lock_path, sandbox_name)  # checked, secrets named, before anything starts
    project = project_file(lock_path)  # its trust: policy applies to every skill, --skill ones too
    registry = open_registry_for_cli(registry_url) if (skills or lock_path) else None
    try:
        result = run(RunSpec(
            task=task, model=model_spec, base_url=base_url, skills=skills, lock=lock_path,
            project=project if project.is_file() else None, registry=registry,
            sandbox=sandbox_name, allow_unsafe_local=allow_unsafe_local, image=image, index_url=index_url,
            extra_index_urls=extra_index_urls, allow_sdist=allow_sdist, isolate_env=isolate_env,
            ignore_requires_python=ignore_requires_python,
            sandbox_settings=settings,
            inputs=inputs, output_dir=output_dir, memory=memory, transcript=transcript_path, max_steps=max_steps,
            max_seconds=max_seconds, max_tokens=max_tokens, context_budget=context_budget, timeout_ms=timeout_ms,
            catalog_budget=catalog_budget, approve=approve, policy=policy_path, subagents=subagents, compact=compact,
            progress=progress, **network,
        ))
    finally:
        if registry is not None:
            registry.close()
    for warning in result.warnings:
        progress(f"warning: {warning}")
    for note in result.output_notes:
        progress(f"output: {note}")
    if result.egress is not None:
        progress(result.egress["summary"])
    if fmt == "json":
        emit_json(result.to_dict())
    else:
        if result.answer is not None:
            click.echo(result.answer)
        progress(
            f"outcome: {result.outcome}; {result.steps} steps; {result.tokens_used} tokens used; final context {result.final_context}; "
            f"prefix reuse {result.prefix_reuse:.2f}; {result.duration_s:.1f} s; transcript {result.transcript}"
        )
        if result.message:
            progress(result.message)
    if result.output_error:
        progress(f"error: {result.output_error}")
    sys.exit(result.exit_code)


@click.command("catalog")
@click.argument("refs", nargs=-1, required=True)
@click.option("--budget", default=8000, show_default=True, type=click.IntRange(min=200), help="Characters the catalog may take; longer ones are shortened predictably.")
@registry_option
@format_option
@library_errors
def catalog_cmd(refs, budget, registry_url, fmt) -> None:
    """Print the <available_skills> block the model would see for REFs (metadata only)."""
    from skillctl.runtime.loader import catalog_for, resolve_all

    reg = open_registry_for_cli(registry_url)
    resolved = resolve_all(reg, list(refs))
    cat = catalog_for(resolved, budget_chars=budget)
    if cat.warning():
        progress(f"warning: {cat.warning()}")
    if fmt == "json":
        emit_json({"catalog": cat.text, "skills": [{"name": r.name, "version": r.version, "digest": r.digest} for r in resolved], "shortened": cat.shortened})
    else:
        click.echo(cat.text, nl=False)


@click.command("export")
@click.argument("refs", nargs=-1)
@output_option("dest", old=("--to",), required=True, help="Folder agents read skills from, e.g. .agents/skills or .claude/skills.")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Take skills from this skills.lock, exactly as pinned (default with it: every locked skill); "
              "REFs the lock does not pin come from --registry.")
@click.option("--force", is_flag=True, help="Replace existing skill folders.")
@registry_option
@format_option
@library_errors
def export_cmd(refs, dest, lock_path, force, registry_url, fmt) -> None:
    """Write verified, unpacked skills into a folder, for agents that read skills from disk.

    Every skill is fetched and checked before the first folder is written. With --lock the
    skills are the lock's pins (from their sources: registries, git, folders), digests enforced.
    For folders kept in step with a project, prefer `skillctl install`/`sync`, which mark what
    they write.
    """
    from contextlib import nullcontext

    from skillctl.bundle import read_artifact, write_contents
    from skillctl.runtime.loader import resolve_all

    if not refs and lock_path is None:
        raise click.UsageError("name the skills to export (REF…), or --lock skills.lock to export what it pins")
    if lock_path is not None:
        from skillctl.project.runs import locked_run

        context = locked_run(lock_path, registry=registry_url if refs else None, progress=progress)
    else:
        context = nullcontext(None)
    with context as locked:
        store = locked.store if locked is not None else open_registry_for_cli(registry_url)
        wanted = list(refs) or [s.name for s in locked.lock.skills]
        resolved = resolve_all(store, wanted)
        checked = [(rs, read_artifact(store.fetch(rs), rs.artifact_type, expected_name=rs.name, source=f"{rs.name}@{rs.version}"))
                   for rs in resolved]
    out = []
    for rs, contents in checked:
        folder = write_contents(contents, dest, overwrite=force)
        out.append({"name": rs.name, "version": rs.version, "digest": rs.digest, "path": str(folder)})
        if fmt == "text":
            click.echo(f"{rs.name}@{rs.version} -> {folder}")
    if fmt == "json":
        emit_json(out)
