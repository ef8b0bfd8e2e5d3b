"""benchmark.json: the documented run_summary (mean and stddev per configuration, delta as
numbers), runs that never started, and notes that say what a reader should look at."""

from __future__ import annotations

import pytest

from skillctl.many.benchmark import RunRecord, benchmark, stats

CONFIGS = ("with_skill", "without_skill")


def record(case, config, n, verdicts, seconds=10.0, tokens=1000, started=True, notes=()) -> RunRecord:
    exps = [{"text": f"e{i}", "passed": v, "evidence": "x"} for i, v in enumerate(verdicts)]
    return RunRecord(1 if case == "eval-1" else 2, case, config, n, "answered" if started else "failed", exps,
                     seconds, tokens, started=started, notes=list(notes))


def test_stats_are_mean_and_sample_stddev():
    assert stats([0.5, 1.0]) == {"mean": 0.75, "stddev": 0.3536, "min": 0.5, "max": 1.0}
    assert stats([3.0])["stddev"] == 0.0 and stats([]) == {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}


def test_run_summary_has_the_documented_shape_and_delta_is_the_skill_minus_the_baseline():
    records = [
        record("eval-1", "with_skill", 1, [True, True], seconds=12, tokens=3000),
        record("eval-2", "with_skill", 1, [True, False], seconds=8, tokens=2000),
        record("eval-1", "without_skill", 1, [True, False], seconds=6, tokens=1000),
        record("eval-2", "without_skill", 1, [False, False], seconds=4, tokens=1400),
    ]
    bench = benchmark(records, CONFIGS, {"skill_name": "tally"}, ["eval-1", "eval-2"])
    summary = bench["run_summary"]
    assert set(summary) == {"with_skill", "without_skill", "delta"}
    assert summary["with_skill"]["pass_rate"]["mean"] == 0.75
    assert summary["without_skill"]["pass_rate"]["mean"] == 0.25
    assert summary["with_skill"]["time_seconds"] == {"mean": 10.0, "stddev": 2.828, "min": 8.0, "max": 12.0}
    assert summary["delta"] == {"pass_rate": 0.5, "time_seconds": 5.0, "tokens": 1300.0}
    assert [(r["eval_name"], r["configuration"]) for r in bench["runs"]] == [
        ("eval-1", "with_skill"), ("eval-1", "without_skill"), ("eval-2", "with_skill"), ("eval-2", "without_skill")]
    assert bench["runs"][0]["result"] == {"pass_rate": 1.0, "passed": 2, "failed": 0, "total": 2, "time_seconds": 12.0,
                                          "tokens": 3000, "errors": 0}
    assert "'eval-2: e1' fails in every run of both configurations; check the expectation or the case" in bench["notes"]
    assert "'eval-1: e0' passes in every run of both configurations; it does not show what the skill adds" in bench["notes"]


def test_a_run_that_never_started_counts_as_failed_but_not_in_time_or_tokens():
    records = [record("eval-1", "with_skill", 1, [True], seconds=10, tokens=500),
               record("eval-1", "with_skill", 2, [False], seconds=0.1, tokens=0, started=False,
                      notes=["eval-1/with_skill run 2 did not run (failed): no Docker"]),
               record("eval-1", "without_skill", 1, [False], seconds=5, tokens=300)]
    bench = benchmark(records, CONFIGS, {}, ["eval-1"])
    w = bench["run_summary"]["with_skill"]
    assert w["pass_rate"]["mean"] == 0.5 and w["tokens"]["mean"] == 500 and w["time_seconds"]["mean"] == 10
    assert bench["notes"][0] == "eval-1/with_skill run 2 did not run (failed): no Docker"
    assert bench["runs"][1]["result"]["errors"] == 1


@pytest.mark.parametrize("baseline", ["without_skill", "old_skill"])
def test_the_baseline_configuration_is_named_as_run(baseline):
    records = [record("eval-1", "with_skill", 1, [True]), record("eval-1", baseline, 1, [False])]
    bench = benchmark(records, ("with_skill", baseline), {}, ["eval-1"])
    assert set(bench["run_summary"]) == {"with_skill", baseline, "delta"}
    assert bench["run_summary"]["delta"]["pass_rate"] == 1.0
