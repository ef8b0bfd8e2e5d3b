"""What people look at after an eval: a table for the terminal, and ``iteration-N/report.html``
— one self-contained page (inline CSS and SVG, no script, nothing fetched) with the summary,
charts of pass rate and tokens per case for both configurations, every run with links to its
transcript, grading and outputs, each expectation's verdict and evidence, and the notes
(retried runs, runs that did not start, expectations that never tell the configurations apart).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any, Sequence

from .benchmark import RunRecord
from .svg import grouped_bars

if TYPE_CHECKING:
    from .evalfile import EvalSet
    from .evals import EvalReport

COLOURS = ("#2b6cb0", "#a0aec0")


def case_rows(records: Sequence[RunRecord], case_names: Sequence[str], configs: Sequence[str]) -> list[dict[str, Any]]:
    """Per case and configuration, over its runs: expectations passed/total, mean pass rate,
    mean tokens and seconds of the runs that started (None when none did)."""
    rows = []
    for name in case_names:
        row: dict[str, Any] = {"case": name}
        for config in configs:
            runs = [r for r in records if r.eval_name == name and r.configuration == config]
            ran = [r for r in runs if r.started]
            row[config] = {
                "passed": sum(r.passed for r in runs), "total": sum(r.total for r in runs),
                "pass_rate": sum(r.pass_rate for r in runs) / len(runs) if runs else None,
                "tokens": sum(r.tokens for r in ran) / len(ran) if ran else None,
                "seconds": sum(r.time_seconds for r in ran) / len(ran) if ran else None,
            }
        rows.append(row)
    return rows


def _num(v: float | None, fmt: str) -> str:
    return "—" if v is None else format(v, fmt)


def terminal_table(report: "EvalReport") -> str:
    configs = report.configs
    names = report.case_names
    rows = [["case", *(f"{c} passed" for c in configs), *(f"tokens {c}" for c in configs), *(f"s {c}" for c in configs)]]
    for row in case_rows(report.records, names, configs):
        cells = [row["case"]]
        cells += [f"{row[c]['passed']}/{row[c]['total']} ({row[c]['pass_rate']:.0%})" if row[c]["pass_rate"] is not None
                  else "—" for c in configs]
        cells += [_num(row[c]["tokens"], ",.0f") for c in configs]
        cells += [_num(row[c]["seconds"], ".1f") for c in configs]
        rows.append(cells)
    summary = report.benchmark["run_summary"]
    delta = summary["delta"]
    for key, label, fmt in (("pass_rate", "pass rate", ".2f"), ("tokens", "tokens", ",.0f"), ("time_seconds", "seconds", ".1f")):
        cells = [f"mean {label}"]
        cells += [f"{format(summary[c][key]['mean'], fmt)} ± {format(summary[c][key]['stddev'], fmt)}" for c in configs]
        cells += [f"delta {delta[key]:+{fmt}}"] + [""] * (len(rows[0]) - 4)
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(names) + 2, "")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the page

CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#1a202c;max-width:72rem}
h1{font-size:1.5rem;margin-bottom:.2rem} h2{font-size:1.15rem;margin-top:2rem}
.meta{color:#4a5568;font-size:.9rem} table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #e2e8f0;padding:.3rem .6rem;text-align:left;font-size:.9rem;vertical-align:top}
th{background:#f7fafc} .pass{color:#276749;font-weight:600} .fail{color:#c53030;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:2rem} .evidence{color:#4a5568;white-space:pre-wrap}
.notes li{margin:.2rem 0} code{background:#f7fafc;padding:0 .2rem}
"""


def _verdict(passed: bool) -> str:
    return '<span class="pass">PASS</span>' if passed else '<span class="fail">FAIL</span>'


def _link(href: str, text: str) -> str:
    return f'<a href="{escape(href, quote=True)}">{escape(text)}</a>'


def render_html(report: "EvalReport", evals: "EvalSet") -> str:
    bench = report.benchmark
    meta = bench["metadata"]
    configs = report.configs
    names = [c.name for c in evals.cases]
    rows = case_rows(report.records, names, configs)
    summary, delta = bench["run_summary"], bench["run_summary"]["delta"]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{escape(report.skill_name)} eval — {escape(report.iteration.name)}</title>",
           f"<style>{CSS}</style></head><body>",
           f"<h1>{escape(report.skill_name)}: {escape(report.iteration.name)}</h1>",
           f'<p class="meta">{escape(configs[0])}: {escape(meta["configurations"][configs[0]])} · '
           f'{escape(configs[1])}: {escape(meta["configurations"][configs[1]])}<br>model {escape(meta["executor_model"])} · '
           f'judge {escape(meta["judge_model"])} · engine {escape(meta["engine"])} · '
           f'{meta["runs_per_configuration"]} run(s) per case and configuration · {escape(meta["timestamp"])}</p>']
    out.append("<h2>Summary</h2><table><tr><th></th>" + "".join(f"<th>{escape(c)}</th>" for c in configs) +
               "<th>delta</th></tr>")
    for key, label, fmt in (("pass_rate", "pass rate", ".2f"), ("time_seconds", "time (s)", ".1f"), ("tokens", "tokens used", ",.0f")):
        cells = "".join(f"<td>{format(summary[c][key]['mean'], fmt)} ± {format(summary[c][key]['stddev'], fmt)}</td>"
                        for c in configs)
        out.append(f"<tr><th>{label}</th>{cells}<td>{delta[key]:+{fmt}}</td></tr>")
    out.append("</table>")
    series_pass = [(c, COLOURS[i], [r[c]["pass_rate"] for r in rows]) for i, c in enumerate(configs)]
    series_tok = [(c, COLOURS[i], [r[c]["tokens"] for r in rows]) for i, c in enumerate(configs)]
    out.append('<h2>Per case</h2><div class="charts">')
    out.append(grouped_bars("Pass rate per case", names, series_pass, fmt=lambda v: f"{v:.0%}", max_value=1.0))
    out.append(grouped_bars("Tokens used per case", names, series_tok, fmt=lambda v: f"{v:,.0f}"))
    out.append("</div>")
    out.append(_runs_table(report.records, names, configs))
    out.append(_expectations(report.records, evals, configs))
    if bench["notes"]:
        out.append('<h2>Notes</h2><ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in bench["notes"]) + "</ul>")
    out.append(f'<p class="meta">Files: {_link("benchmark.json", "benchmark.json")}; each run folder holds '
               "<code>outputs/</code>, <code>timing.json</code>, <code>grading.json</code>, "
               "<code>transcript.jsonl</code> and <code>run.json</code>.</p></body></html>")
    return "\n".join(out) + "\n"


def _runs_table(records: Sequence[RunRecord], names: Sequence[str], configs: Sequence[str]) -> str:
    out = ["<h2>Runs</h2><table><tr><th>case</th><th>configuration</th><th>run</th><th>outcome</th><th>passed</th>"
           "<th>tokens used</th><th>time (s)</th><th>files</th></tr>"]
    order = {n: i for i, n in enumerate(names)}
    for r in sorted(records, key=lambda r: (order[r.eval_name], configs.index(r.configuration), r.run_number)):
        links = " · ".join(_link(f"{r.path}/{f}", label) for f, label in
                           (("transcript.jsonl", "transcript"), ("grading.json", "grading"), ("outputs/", "outputs")))
        outcome = escape(r.outcome) + (f"<br><small>{escape(r.message)}</small>" if not r.started else "")
        out.append(f"<tr><td>{escape(r.eval_name)}</td><td>{escape(r.configuration)}</td><td>{r.run_number}</td>"
                   f"<td>{outcome}</td><td>{r.passed}/{r.total}</td><td>{r.tokens:,}</td><td>{r.time_seconds:.1f}</td>"
                   f"<td>{links}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def _expectations(records: Sequence[RunRecord], evals: "EvalSet", configs: Sequence[str]) -> str:
    out = ["<h2>Expectations</h2>"]
    for case in evals.cases:
        out.append(f"<h3>{escape(case.name)}</h3><p>{escape(case.prompt)}</p>")
        out.append("<table><tr><th>expectation</th>" + "".join(f"<th>{escape(c)}</th>" for c in configs) + "</tr>")
        for i, expectation in enumerate(case.graded):
            cells = []
            for config in configs:
                runs = sorted((r for r in records if r.eval_name == case.name and r.configuration == config),
                              key=lambda r: r.run_number)
                parts = [f"{_verdict(r.expectations[i]['passed'])} <span class=\"evidence\">{escape(r.expectations[i]['evidence'])}</span>"
                         for r in runs if i < len(r.expectations)]
                cells.append("<td>" + "<br>".join(parts) + "</td>")
            check = f"<br><code>{escape(expectation.check)}</code>" if expectation.check else ""
            out.append(f"<tr><td>{escape(expectation.text)}{check}</td>{''.join(cells)}</tr>")
        out.append("</table>")
    return "\n".join(out)


def write_report(report: "EvalReport", evals: "EvalSet") -> None:
    (report.iteration / "report.html").write_text(render_html(report, evals), "utf-8")
