"""Per-command exec latency: the Docker sandbox against `docker exec CONTAINER true` (CLI).

Both run against the same container in the same run, interleaved so that drift on a shared
machine hits both alike. The sandbox does more per command (`timeout -k … sh -c`, explicit
cwd/env, capped capture, exit-code inspect) and must still be no slower than the CLI.
Prints medians and, as the last line, `exec_ratio=R` (sandbox / CLI; target <= 1.0).

    python bench/exec_latency.py [--runs 40]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="measured commands per side")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()

    from skillctl.sandbox.docker_backend import DockerSandbox
    from skillctl.sandbox.image import ensure_image

    docker_cli = shutil.which("docker")
    if docker_cli is None:
        print("error: the docker CLI is needed for the baseline", file=sys.stderr)
        return 1
    image = ensure_image(progress=lambda line: print(line, file=sys.stderr))
    sandbox_s: list[float] = []
    cli_s: list[float] = []
    with DockerSandbox(image=image) as sb:
        cid = sb.container_id

        def via_sandbox() -> float:
            started = time.perf_counter()
            result = sb.exec("true")
            elapsed = time.perf_counter() - started
            assert result.ok, result
            return elapsed

        def via_cli() -> float:
            started = time.perf_counter()
            subprocess.run([docker_cli, "exec", cid, "true"], check=True, stdout=subprocess.DEVNULL)
            return time.perf_counter() - started

        for _ in range(args.warmup):
            via_sandbox()
            via_cli()
        for i in range(args.runs):
            # Alternate which goes first so neither always follows the other.
            if i % 2:
                sandbox_s.append(via_sandbox())
                cli_s.append(via_cli())
            else:
                cli_s.append(via_cli())
                sandbox_s.append(via_sandbox())

    sb_med, cli_med = statistics.median(sandbox_s), statistics.median(cli_s)
    print(f"runs per side: {args.runs}")
    print(f"sandbox.exec('true'):        median {sb_med * 1000:7.1f} ms  p90 {_p90(sandbox_s) * 1000:7.1f} ms")
    print(f"docker exec CONTAINER true:  median {cli_med * 1000:7.1f} ms  p90 {_p90(cli_s) * 1000:7.1f} ms")
    print(f"exec_ratio={sb_med / cli_med:.2f}")
    return 0


def _p90(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.9) - 1)]


if __name__ == "__main__":
    sys.exit(main())
