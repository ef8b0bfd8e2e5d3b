"""Long sub-agents inside the context window: naive sending vs fitting.

The seed's scenario: 8 sub-agents, one user message each, each reading 40 long chapters (texts
in several scripts, ~30k estimated tokens each, so ~1.2M tokens per agent) with a 400k budget per
request and a hard model limit of 1M. The model is scripted (it reads every chapter in turn, with
a short `wc` before each), so every mode replays the same trajectory: only what is *sent* differs.

* naive: the whole history each time; a request over the hard limit is rejected as invalid and,
  like any invalid request, not retried — the agent ends there.
* fitted: ``skillctl.context.fit(history, 400_000)`` before every request.
* baseline for prompt caching: the same fitting with batches of one instead of four.
* baseline for speed: re-estimating every message per request (no memo) vs memoised fitting.
* stress for speed: a ~1.1M-token history of 4,000 small rounds (8,000 messages).

Run: ``python bench/context_fitting.py``. The last line is machine-readable:
``agents_over_limit_naive=N agents_over_limit_fitted=M prefix_reuse=R fit_ms_p50=T`` where
``fit_ms_p50`` is the median fitting time of requests over histories of ≥ 1M tokens (the worse
of the scenario and the stress case), estimates memoised.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from skillctl.context import CLEARING_NOTICE, FitPolicy, PrefixReuse, fit  # noqa: E402
from skillctl.errors import ContextTooLong  # noqa: E402
from skillctl.messages import Message, ToolCall, assistant, system, tool_result, user  # noqa: E402
from skillctl.tokens import estimate_tokens  # noqa: E402

AGENTS = 8
CHAPTERS = 40
CHAPTER_TOKENS = 30_000
BUDGET = 400_000
HARD_LIMIT = 1_000_000
SEED = 6

# ------------------------------------------------------------------------------ texts

_WORDS = {
    "english": "the of and river city night morning letter window road she he they said house old "
    "light long never always because through between before after under silence voice".split(),
    "russian": "и в не на он она был была сказал дом город река ночь утро письмо окно дорога "
    "старый свет долго никогда всегда потому через между перед после тишина голос".split(),
    "german": "und der die das Straße Mädchen über Größe schön Fluss Stadt Nacht Morgen Brief "
    "Fenster Weg alt Licht lange niemals immer weil durch zwischen vor nach Stille Stimme".split(),
    "greek": "και το η ο ποτάμι πόλη νύχτα πρωί γράμμα παράθυρο δρόμος παλιό φως πάντα ποτέ "
    "γιατί ανάμεσα πριν μετά σιωπή φωνή".split(),
    "korean": "그리고 강 도시 밤 아침 편지 창문 길 오래된 빛 언제나 결코 왜냐하면 사이 전에 후에 "
    "침묵 목소리 그녀는 말했다".split(),
    "mixed": "ls -la → Привет café 😀 ✅ 世界 def main(): return 0; naïve Ελλάδα 🚀 grep -c".split(),
}
_HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严"
_KANA = "のにはをたがでてとしれさあるいうかなりまったことする"


def _paragraph(rng: random.Random, script: str) -> str:
    if script == "chinese":
        return "".join(rng.choice(_HAN) for _ in range(rng.randint(60, 140))) + "。"
    if script == "japanese":
        return "".join(rng.choice(_HAN if rng.random() < 0.4 else _KANA) for _ in range(rng.randint(60, 140))) + "。"
    words = _WORDS[script]
    return " ".join(rng.choice(words) for _ in range(rng.randint(40, 120))) + "."


SCRIPTS = ("english", "russian", "german", "chinese", "japanese", "korean", "greek", "mixed")


def make_chapter(k: int) -> tuple[str, str]:
    """Chapter ``k``: (script, text of about CHAPTER_TOKENS estimated tokens)."""
    rng = random.Random(SEED * 1000 + k)
    script = SCRIPTS[k % len(SCRIPTS)]
    parts, tokens = [f"Chapter {k + 1}\n"], 0
    while tokens < CHAPTER_TOKENS:
        p = _paragraph(rng, script)
        parts.append(p)
        tokens += estimate_tokens(p) + 1
    return script, "\n\n".join(parts)


# ------------------------------------------------------------------------------ trajectories


@dataclass
class Trajectory:
    """One scripted sub-agent run: the full history and, for each model request, how many
    history messages existed when it was made."""

    history: list[Message] = field(default_factory=list)
    request_points: list[int] = field(default_factory=list)


def trajectory(agent: int, chapters: list[str]) -> Trajectory:
    t = Trajectory()
    h = t.history
    h.append(system("You are a sub-agent with a shell tool.\n\n" + CLEARING_NOTICE))
    h.append(user(f"Read all {CHAPTERS} chapters in /data/book (start at chapter {5 * agent + 1}) and "
                  "report every place where the river is mentioned, with the chapter number."))
    order = [(5 * agent + i) % CHAPTERS for i in range(CHAPTERS)]
    n = 0
    for k in order:
        name = f"/data/book/ch{k + 1:02}.txt"
        for cmd, out in ((f"wc -w {name}", f"{len(chapters[k].split())} {name}"), (f"cat {name}", chapters[k])):
            t.request_points.append(len(h))
            call = ToolCall(f"call_{agent}_{n}", "shell", json.dumps({"command": cmd}))
            n += 1
            h.append(assistant(f"Next: {cmd}", (call,)))
            h.append(tool_result(call, out))
    t.request_points.append(len(h))  # the request that yields the final answer
    h.append(assistant("Done: the river appears in every chapter; details follow."))
    return t


# ------------------------------------------------------------------------------ modes


@dataclass
class Outcome:
    over_limit: bool = False
    requests: int = 0
    z: int = 0  # Σ c_k over the requests actually made
    max_request: int = 0
    reuse: PrefixReuse = field(default_factory=PrefixReuse)
    fit_ms: list[float] = field(default_factory=list)
    fit_ms_1m: list[float] = field(default_factory=list)  # fits over histories ≥ 1M tokens
    pass_used: dict[int, int] = field(default_factory=dict)


def run(t: Trajectory, prefix_sums: list[int], mode: str, policy: FitPolicy | None = None) -> Outcome:
    o = Outcome()
    for L in t.request_points:
        view = t.history[:L]
        if mode == "naive":
            sent, tokens = view, prefix_sums[L]
        else:
            t0 = time.perf_counter()
            try:
                r = fit(view, BUDGET, policy=policy)
            except ContextTooLong:
                o.over_limit = True
                break
            ms = (time.perf_counter() - t0) * 1000
            o.fit_ms.append(ms)
            if prefix_sums[L] >= 1_000_000:
                o.fit_ms_1m.append(ms)
            o.pass_used[r.pass_used] = o.pass_used.get(r.pass_used, 0) + 1
            sent, tokens = r.messages, r.tokens
        if tokens > HARD_LIMIT:  # the model rejects the request as invalid: no retry
            o.over_limit = True
            break
        o.requests += 1
        o.z += tokens
        o.max_request = max(o.max_request, tokens)
        o.reuse.observe(sent)
    return o


def prefix_token_sums(history: list[Message]) -> list[int]:
    sums = [0]
    for m in history:
        sums.append(sums[-1] + m.tokens)  # memoises every estimate, as the loop would when recording
    return sums


def stress_fit_ms(reps: int = 40) -> tuple[float, int, int]:
    """Median fit time over a ~1.1M-token history of 4,000 small rounds (plus one per rep)."""
    h = [system("stress"), user("many small steps")]
    rng = random.Random(SEED)
    for k in range(4000 + reps):
        call = ToolCall(f"s{k}", "shell", json.dumps({"command": f"sed -n {k},+20p log.txt"}))
        h += [assistant(tool_calls=(call,)), tool_result(call, _paragraph(rng, "english")[:1000].ljust(1000, "."))]
    for m in h:
        m.tokens  # noqa: B018 — memoise
    times = []
    for r in range(reps):
        view = h[: len(h) - 2 * (reps - r)]
        t0 = time.perf_counter()
        fit(view, BUDGET)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), sum(m.tokens for m in h[: len(h) - 2 * reps]), len(h) - 2 * reps


def main() -> None:
    t0 = time.perf_counter()
    chapters_meta = [make_chapter(k) for k in range(CHAPTERS)]
    chapters = [text for _, text in chapters_meta]
    ru = next(text for script, text in chapters_meta if script == "russian")
    print(f"chapters: {CHAPTERS} in {len(set(SCRIPTS))} scripts, built in {time.perf_counter() - t0:.1f}s")
    print(f"per-script estimate of a Russian chapter: {estimate_tokens(ru):,} tokens vs chars/4 {len(ru) // 4:,} "
          f"(ratio {estimate_tokens(ru) / (len(ru) / 4):.2f})")

    trajs = [trajectory(a, chapters) for a in range(AGENTS)]
    sums = [prefix_token_sums(t.history) for t in trajs]
    print(f"per agent: {len(trajs[0].request_points)} requests, full history "
          f"{min(s[-1] for s in sums):,}–{max(s[-1] for s in sums):,} tokens; budget {BUDGET:,}, hard limit {HARD_LIMIT:,}")

    naive = [run(t, s, "naive") for t, s in zip(trajs, sums)]
    fitted = [run(t, s, "fit") for t, s in zip(trajs, sums)]
    batch1 = [run(t, s, "fit", FitPolicy(batch_size=1)) for t, s in zip(trajs, sums)]
    unbounded_z = sum(sum(s[L] for L in t.request_points) for t, s in zip(trajs, sums))

    over_naive = sum(o.over_limit for o in naive)
    over_fit = sum(o.over_limit for o in fitted)
    done_fit = sum(o.requests == len(t.request_points) for o, t in zip(fitted, trajs))

    def reuse(outs: list[Outcome]) -> tuple[float, float]:
        hits = sum(o.reuse.reused for o in outs)
        comps = sum(o.reuse.compared for o in outs)
        shared = sum(o.reuse.shared_tokens for o in outs)
        sent = sum(o.reuse.compared_tokens for o in outs)
        return hits / comps, shared / sent

    r4, r4_tok = reuse(fitted)
    r1, r1_tok = reuse(batch1)
    z_fit = sum(o.z for o in fitted)
    passes: dict[int, int] = {}
    for o in fitted:
        for p, c in o.pass_used.items():
            passes[p] = passes.get(p, 0) + c

    print(f"naive : {over_naive}/{AGENTS} agents hit the hard limit (first rejected request after "
          f"{min(o.requests for o in naive)}–{max(o.requests for o in naive)} requests); Z before rejection {sum(o.z for o in naive):,}")
    print(f"fitted: {over_fit}/{AGENTS} agents over the limit, {done_fit}/{AGENTS} completed; largest request "
          f"{max(o.max_request for o in fitted):,} tokens; passes used {dict(sorted(passes.items()))}")
    print(f"Z (Σ c_k): fitted {z_fit:,} vs unlimited-context naive {unbounded_z:,} (ratio {z_fit / unbounded_z:.3f})")
    print(f"prefix reuse: batches of 4 {r4:.3f} (tokens {r4_tok:.3f}) vs batches of 1 {r1:.3f} (tokens {r1_tok:.3f}); "
          f"ratio {r4 / r1 if r1 else float('inf'):.2f}×")

    all_ms = [ms for o in fitted for ms in o.fit_ms]
    ms_1m = [ms for o in fitted for ms in o.fit_ms_1m]
    scen_p50 = statistics.median(ms_1m)
    # speed baseline: what a loop without memoised estimates would pay per request at the end
    last = trajs[0].history
    tb = time.perf_counter()
    sum(estimate_tokens(m.content) for m in last)
    rescan_ms = (time.perf_counter() - tb) * 1000
    stress_p50, stress_tokens, stress_n = stress_fit_ms()
    print(f"fit time: p50 {statistics.median(all_ms):.3f} ms over all {len(all_ms)} requests; "
          f"p50 {scen_p50:.3f} ms over {len(ms_1m)} requests with ≥1M-token histories "
          f"(re-estimating such a history without memo: {rescan_ms:.0f} ms, {rescan_ms / scen_p50:.0f}× slower)")
    print(f"fit time, stress: p50 {stress_p50:.2f} ms for {stress_tokens:,} tokens in {stress_n:,} messages (target ≤ 10 ms)")
    print(f"total bench time {time.perf_counter() - t0:.1f}s")
    print(f"agents_over_limit_naive={over_naive} agents_over_limit_fitted={over_fit} "
          f"prefix_reuse={r4:.3f} fit_ms_p50={max(scen_p50, stress_p50):.3f}")


if __name__ == "__main__":
    main()
