"""``skillctl run``: load pinned skills into a sandbox and let a model work through a shell."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, progress, registry_option
from skillctl.errors import SkillctlError


def _default_transcript() -> Path:
    from platformdirs import user_state_dir

    return Path(user_state_dir("skillctl")) / "runs" / f"run-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def _resolve_skills(reg, refs: tuple[str, ...], lock_path: Path | None):
    from skillctl.registry.lockfile import read_lock, resolve_locked

    resolved = [reg.resolve(r) for r in refs]
    if lock_path is not None:
        lock = read_lock(lock_path)
        resolved += [resolve_locked(reg, s) for s in lock.skills]
    return resolved


@click.command("run")
@click.argument("task")
@click.option("--skill", "skills", multiple=True, metavar="REF", help="Skill to load (NAME, NAME@RANGE, skill_ID[@VERSION]); repeatable.")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Load every skill pinned in this skills.lock (digests enforced).")
@click.option("--model", "model_spec", envvar="SKILLCTL_MODEL", required=True, metavar="SPEC", help="script:FILE, openai:MODEL or openai-chat:MODEL. Env: SKILLCTL_MODEL.")
@click.option("--base-url", envvar="OPENAI_BASE_URL", help="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp…). Env: OPENAI_BASE_URL. The key comes from OPENAI_API_KEY.")
@click.option("--input", "inputs", multiple=True, type=click.Path(exists=True, path_type=Path), help="File or folder staged into /workspace before the run; repeatable.")
@click.option("--max-steps", default=30, show_default=True, type=click.IntRange(min=1), help="K_max: model calls before the run stops with budget_exhausted.")
@click.option("--max-seconds", type=click.FloatRange(min=1), help="Wall-clock budget for the whole run.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Budget on Z, the total tokens sent over the run.")
@click.option("--context-budget", default=100_000, show_default=True, type=click.IntRange(min=1000), help="Tokens per request; older tool results are cleared to fit.")
@click.option("--timeout-ms", default=60_000, show_default=True, type=click.IntRange(min=100), help="Default per-command timeout.")
@click.option("--approve", type=click.Choice(["policy", "never", "all"]), default="policy", show_default=True, help="Without a terminal: what happens to commands the policy says to ask about (policy: its 'unattended' setting, deny by default).")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Approval policy file (YAML rules: pattern → allow|ask|deny).")
@click.option("--sandbox", "sandbox_name", type=click.Choice(["docker", "local"]), default="docker", show_default=True, help="Where commands run.")
@click.option("--allow-unsafe-local", is_flag=True, help="Permit --sandbox local (no isolation at all).")
@click.option("--image", help="Agent image (default: the one `skillctl image build` makes, built on first use). Skill environments are layered on it.")
@click.option("--index-url", envvar="SKILLCTL_INDEX_URL", metavar="URL", help="Package index for the skills' declared requirements. Env: SKILLCTL_INDEX_URL (else UV_INDEX_URL, PIP_INDEX_URL, PyPI).")
@click.option("--allow-sdist", is_flag=True, help="Accept source distributions where no wheel fits (built in a throwaway container, never here).")
@click.option("--memory", default="2g", show_default=True, help="Container memory limit.")
@click.option("--cpus", default=1.0, show_default=True, type=float, help="Container CPU limit.")
@click.option("--catalog-budget", type=click.IntRange(min=200), help="Characters the skills catalog may take in c1 (default: 2 % of --context-budget, i.e. 8,000 for 100k tokens).")
@click.option("--compact", is_flag=True, help="When clearing old tool results is not enough, let the model summarise the oldest part of the conversation instead of dropping it (D7; costs extra model calls).")
@click.option("--subagents", is_flag=True, help="Offer the model a `subagent` tool: a fresh-context agent run on a sub-task whose final answer alone comes back.")
@click.option("--output", "output_dir", type=click.Path(file_okay=False, path_type=Path), help="After the run, copy the sandbox's working folder here (links and special files are skipped).")
@click.option("--transcript", "transcript_path", type=click.Path(dir_okay=False, path_type=Path), help="JSON Lines file for the full run record (default: in the user state folder).")
@registry_option
@format_option
@library_errors
def run_cmd(task, skills, lock_path, model_spec, base_url, inputs, max_steps, max_seconds, max_tokens, context_budget,
            timeout_ms, approve, policy_path, sandbox_name, allow_unsafe_local, image, index_url, allow_sdist, memory, cpus, catalog_budget,
            compact, subagents, output_dir, transcript_path, registry_url, fmt) -> None:
    """Run an agent on TASK with the given skills loaded into a sandbox.

    Order: resolve the skills (metadata), start a locked-down container, copy each verified
    bundle to /skills/NAME/, put the skills catalog in the first context, then loop: the model
    proposes shell commands, the harness runs (or refuses) them, until a final answer or a budget.
    Progress goes to stderr; the answer to stdout. Exit 0 for an answer; otherwise the outcome's
    code: 3 steps, 4 time, 5 tokens, 6 invalid calls, 7 context too long, 8 model error,
    9 sandbox error, 130 interrupted.
    """
    from skillctl.models import open_model
    from skillctl.runtime.approval import Approver, ApprovalPolicy
    from skillctl.runtime.loader import load_skills
    from skillctl.runtime.loop import Agent, Limits
    from skillctl.runtime.prompt import system_prompt
    from skillctl.runtime.staging import extract_outputs, inputs_tar
    from skillctl.runtime.tools import ToolBox, shell_tool
    from skillctl.runtime.transcript import Transcript
    from skillctl.sandbox import open_sandbox

    model = open_model(model_spec, base_url=base_url)
    policy = ApprovalPolicy.load(policy_path) if policy_path else ApprovalPolicy.default()
    approver = Approver(policy, mode=approve)
    reg = open_registry_for_cli(registry_url) if (skills or lock_path) else None
    resolved = _resolve_skills(reg, skills, lock_path) if reg is not None else []
    # Packed before the container starts, so a bad input fails in one line without one.
    staged = inputs_tar(list(inputs)) if inputs else None
    settings = {"memory": memory, "cpus": cpus} if sandbox_name == "docker" else {}
    if sandbox_name == "docker":
        from skillctl.env.prepare import run_image
        from skillctl.sandbox.image import ensure_image

        image = run_image(resolved, reg, image or ensure_image(progress=progress), lock_path=lock_path, index=index_url,
                          allow_sdist=allow_sdist, progress=progress)
    sandbox = open_sandbox(sandbox_name, image=image, allow_unsafe_local=allow_unsafe_local, progress=progress, **settings)
    transcript_path = transcript_path or _default_transcript()
    with sandbox:
        progress(f"sandbox started ({sandbox_name})")
        if staged is not None:
            # Owned by the agent's user: staged as root, inputs were read-only to the agent and it
            # could not write into a staged folder.
            sandbox.put_archive(sandbox.workspace, staged, user=sandbox.agent_user)
            progress(f"staged {len(inputs)} input(s) into {sandbox.workspace}")
        # About 2 % of the context window, at ~4 characters per token (Codex uses the same share).
        budget_chars = catalog_budget or max(200, int(context_budget * 0.02 * 4))
        loaded = load_skills(resolved, reg, sandbox, catalog_budget_chars=budget_chars, progress=progress) if reg is not None else None

        def on_result(cmd, res, reason):
            if res is None:
                progress(f"  refused: {cmd[:120]} ({reason})")
            elif res.outcome_type == "timeout":
                progress(f"  timeout: {cmd[:120]}")
            else:
                progress(f"  exit {res.exit_code} in {res.duration_s * 1000:.0f} ms: {cmd[:120]}")

        # The sandbox's own paths: a container uses /workspace and /skills, the local backend folders.
        workspace, skills_root = sandbox.workspace, sandbox.skills_root
        shell = shell_tool(sandbox, approve=approver.approve, default_timeout_ms=timeout_ms, on_result=on_result,
                           workspace=workspace, skills_root=skills_root)
        system_text = system_prompt(loaded.catalog_text if loaded else "", workspace=workspace, skills_root=skills_root)
        limits = Limits(max_steps=max_steps, max_seconds=max_seconds, max_total_tokens=max_tokens, context_budget=context_budget)
        tool_list = [shell]
        if subagents:
            from skillctl.runtime.subagent import subagent_tool

            tool_list.append(subagent_tool(model, system_text, [shell], limits=limits, progress=progress,
                                           transcript_dir=transcript_path.with_suffix(".subagents")))
        fitter = None
        if compact:
            from skillctl.context import Compactor
            from skillctl.runtime.summarize import model_summarizer

            fitter = Compactor(model_summarizer(model)).fit
        agent = Agent(model, ToolBox(tool_list), limits=limits, transcript=Transcript(transcript_path), progress=progress,
                      fitter=fitter)
        result = agent.run(system_text, task)
        if output_dir is not None and result.outcome != "sandbox_error":
            files = extract_outputs(sandbox.get_archive(workspace), output_dir)
            progress(f"copied {len(files)} file(s) from the workspace to {output_dir}")
    if fmt == "json":
        emit_json(result.to_dict())
    else:
        if result.answer is not None:
            click.echo(result.answer)
        progress(
            f"outcome: {result.outcome}; steps K={result.steps}; Z={result.Z} tokens; final context {result.final_context}; "
            f"prefix reuse {result.prefix_reuse:.2f}; transcript {result.transcript}"
        )
        if result.message:
            progress(result.message)
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
@click.argument("refs", nargs=-1, required=True)
@click.option("--to", "dest", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder agents read skills from, e.g. .agents/skills or .claude/skills.")
@click.option("--force", is_flag=True, help="Replace existing skill folders.")
@registry_option
@format_option
@library_errors
def export_cmd(refs, dest, force, registry_url, fmt) -> None:
    """Write verified, unpacked skills into a folder, for agents that read skills from disk."""
    from skillctl.bundle import extract_bundle
    from skillctl.runtime.loader import resolve_all

    reg = open_registry_for_cli(registry_url)
    out = []
    for rs in resolve_all(reg, list(refs)):
        data = reg.fetch(rs)
        folder = extract_bundle(data, dest, expected_name=rs.name, overwrite=force, source=f"{rs.name}@{rs.version}")
        out.append({"name": rs.name, "version": rs.version, "digest": rs.digest, "path": str(folder)})
        if fmt == "text":
            click.echo(f"{rs.name}@{rs.version} -> {folder}")
    if fmt == "json":
        emit_json(out)
