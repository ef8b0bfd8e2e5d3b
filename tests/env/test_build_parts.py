"""The environment image's build, without the engine: how wheels are split into reusable parts,
and how the build's output is relayed (whole lines, as uv wrote them)."""

from __future__ import annotations

from skillctl.env.build import EnvFile, _follow, partition, split_lines

from .wheels import make_wheel


def wheel(folder, name, size=0):
    path = make_wheel(folder, name, "1.0")
    if size:
        with open(path, "ab") as fh:  # bulk only matters for the size rule
            fh.write(b"\0" * size)
    return EnvFile(path, "0" * 64, f"{name}==1.0")


def test_a_big_wheel_is_a_part_of_its_own_and_one_more_small_package_changes_one_part(tmp_path):
    small = [wheel(tmp_path, n) for n in ("six", "idna", "charset-normalizer", "certifi", "click", "urllib3")]
    big = wheel(tmp_path, "numpy", 6 * 1024 * 1024)
    before = partition(small + [big])
    after = partition(small + [big, wheel(tmp_path, "pyyaml")])
    assert [big] in before and [big] in after
    changed = [p for p in after if p not in before]
    assert len(changed) == 1 and any(w.pin == "pyyaml==1.0" for w in changed[0])
    assert len([p for p in before if p not in after]) <= 1  # pyyaml joined one bucket, or made a new one
    assert sorted(w.pin for p in after for w in p) == sorted([w.pin for w in small + [big]] + ["pyyaml==1.0"])
    assert partition(small, buckets=1, alone_above=float("inf")) == [sorted(small, key=lambda w: w.pin)]
    assert partition([]) == []


def test_uvs_output_is_relayed_in_whole_lines_without_dockers_colour_codes():
    # Docker wraps each write of a RUN step's stderr in ESC[91m … ESC[0m; uv writes
    # "+ biopython==1.88" in pieces, and a progress bar redraws its line with \r.
    chunks = ["Step 10/20 : RUN uv pip install", "\n", "\x1b[91m + \x1b[0m", "\x1b[91mbiopython\x1b[0m",
              "\x1b[91m==\x1b[0m", "\x1b[91m1\x1b[0m", "\x1b[91m.88\n\x1b[0m", "\x1b[91mInstalled 1 package",
              " in 4ms\r\n\x1b[0m", "Downloading 10%\rDownloading 100%\n", " ---> 0123456789ab\n", "last words"]
    said, steps = [], []
    _follow(({"stream": c} for c in chunks), "tag", said.append, {}, steps)
    assert said == ["  Step 10/20 : RUN uv pip install", "   + biopython==1.88", "  Installed 1 package in 4ms",
                    "  Downloading 10%", "  Downloading 100%", "   ---> 0123456789ab", "  last words"]
    assert steps == ["0123456789ab"]
    assert split_lines("", "half") == ([], "half") and split_lines("half", " done\n") == (["half done"], "")
