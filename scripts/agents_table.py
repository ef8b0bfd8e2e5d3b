"""Print the table of agents of docs/targets.md from skillctl/project/agents.json.

    python scripts/agents_table.py      # paste between the agents-table markers of docs/targets.md

tests/project/test_agents.py fails when the page's table and the shipped data disagree.
"""

from __future__ import annotations

import sys

from skillctl.project.agents import Agent, Location, load_agents


def _location(location: Location) -> str:
    text = f"`{location.default}`"
    overrides = [f"`${o.var}/{o.path}`" if o.path else f"`${o.var}`" for o in location.env]
    return " or ".join(overrides + [text]) if overrides else text


def _row(agent: Agent) -> str:
    names = ", ".join(f"`{n}`" for n in (agent.name, *agent.aliases))
    checked = f"[docs]({agent.docs})" if agent.checked == "agent-docs" else "vercel-labs/skills"
    return f"| {agent.display} | {names} | `{agent.project}` | {_location(agent.user)} | {checked} |"


def render() -> str:
    lines = ["| agent | `--agent` | project folder | user folder (`--user`) | checked against |",
             "| --- | --- | --- | --- | --- |"]
    lines += [_row(agent) for agent in load_agents().values()]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render() + "\n")
