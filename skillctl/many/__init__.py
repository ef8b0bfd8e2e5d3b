"""Many runs at once: evals of a skill and batches of tasks, on this machine or a Ray cluster.

    job        ``Job`` / ``JobResult``: one run as plain data — all that crosses to a worker
               (another thread, or a Ray node) and back
    worker     ``execute(job)``: the run through ``skillctl.runtime.run``, graded, packed
    grading    expectations: shell checks in the run's container, string ones by a judge model
    engines    ``open_engine("local"|"ray")``: run jobs with bounded concurrency
    batch      ``skillctl batch``: a JSON Lines file of tasks, results appended, resumable
    evals      ``skillctl eval``: ``evals/evals.json``, with vs without the skill, the
               documented workspace, ``benchmark.json`` and ``report.html``

Everything heavy is imported on first use: ``import skillctl.many`` costs nothing, and Ray is
needed only by ``open_engine("ray")``.
"""
