"""Evaluation runner: play a policy over a scenario set, log every episode, summarise the run.

    python -m core.runs.eval --policy oracle --scenarios clarifyrl-heldout --limit 50 --rubric v1 --out runs/oracle
    python -m core.runs.eval compare runs/a runs/b [--json OUT]

A run directory holds ``episodes.jsonl`` (core.runs.episode_log) and ``summary.json`` (core.runs.summary).
Episode k of a scenario gets its own ``random.Random`` seeded from (seed, scenario id, k), so a
run is reproducible and independent of the order scenarios are played in.
"""

import argparse
import json
import random
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Sequence

from core.clarify.endpoint_policy import EndpointError
from core.clarify.environment import ClarifyEnv
from core.runs.episode_log import read_episodes, write_episodes
from core.clarify.policies import CUED_NAMES, SCRIPTED, Policy, make_policy
from core.records import Episode, Generation, Scenario
from core.clarify.rubrics import RubricVersion
from core.clarify.scenarios import SPEC_HELP, load_scenarios
from core.runs.comparison import Comparison, compare_episodes
from core.runs.summary import summarize, write_run

PROGRESS_MIN = 200
"""Show a progress bar (when asked) only for runs of at least this many episodes."""


def episode_rng(seed: int, scenario: Scenario, sample: int) -> random.Random:
    """The random stream of one episode (string seeds hash deterministically across runs)."""
    return random.Random(f"{seed}:{scenario.id}:{sample}")


def play_episode(policy: Policy, scenario: Scenario, *, sample: int = 0, rubric: RubricVersion = "v1",
                 seed: int = 0, sessions=None) -> Episode:
    """One complete scored episode of ``policy`` on ``scenario`` (on a served environment when
    ``sessions``, a ``core.clarify.remote.SessionPool``, is given)."""
    if sessions is not None:
        from core.clarify.remote import play_remote

        return play_remote(policy, scenario, sessions.client(), episode_rng(seed, scenario, sample),
                           sample=sample, rubric=rubric)
    env = ClarifyEnv(scenario, rubric)
    policy.play(env, episode_rng(seed, scenario, sample))
    if not env.done:
        raise RuntimeError(f"policy {policy.name!r} returned before the episode ended")
    return env.episode(policy.name, sample=sample, generation=getattr(policy, "generation", None))


def play_samples(policy: Policy, scenarios: Sequence[Scenario], samples: int, *,
                 rubric: RubricVersion = "v1", seed: int = 0) -> list[Episode]:
    """The ``samples`` episodes of each scenario played in lockstep by a batching policy (one
    generate call per step), from one random stream per group (its first scenario's sample 0)."""
    envs = [ClarifyEnv(scenario, rubric) for scenario in scenarios for _ in range(samples)]
    policy.play_batch(envs, episode_rng(seed, scenarios[0], 0))
    return [env.episode(policy.name, sample=k % samples, generation=getattr(policy, "generation", None))
            for k, env in enumerate(envs)]


def run_eval(policy: Policy | str, scenarios: Sequence[Scenario], *, samples: int = 1, rubric: RubricVersion = "v1",
             seed: int = 0, progress: bool = False, batch_samples: bool = False, batch_scenarios: int = 1,
             env_url: str | None = None, done: Sequence[Episode] = (),
             go_on: Callable[[list[Episode]], bool] | None = None) -> list[Episode]:
    """Play every scenario ``samples`` times; episodes in scenario order, samples adjacent.

    ``env_url`` plays against a served environment (``python -m core.clarify.serve``), one session
    per worker thread, instead of in process; the episodes are the same.

    ``batch_samples`` plays a scenario's samples as one batch when the policy can (chat models):
    several times faster on CPU, seeded per scenario rather than per episode. ``batch_scenarios``
    N > 1 puts N consecutive scenarios' samples in one batch (seeded per group of N): a CPU decodes
    16 rows at about twice the tokens/s of 4.

    Chunks: ``done`` holds the episodes of an earlier call's first groups (they are kept, not
    replayed); ``go_on``, called with every episode so far after each group, stops the run early by
    returning False. Groups are seeded on their own, so a run in chunks equals one played whole.
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    if batch_scenarios < 1 or (batch_scenarios > 1 and not batch_samples):
        raise ValueError(f"batch_scenarios must be >= 1 and needs batch_samples, got {batch_scenarios}")
    if isinstance(policy, str):
        policy = make_policy(policy)
    bar = None
    if progress and len(scenarios) * samples >= PROGRESS_MIN:
        from tqdm import tqdm

        bar = tqdm(total=len(scenarios) * samples, desc=policy.name, unit="ep", file=sys.stderr)
    batched = batch_samples and hasattr(policy, "play_batch")
    if batched and env_url:
        raise ValueError("--batch-samples plays in process; it cannot be combined with --env-url")
    sessions = None
    if env_url:
        from core.clarify.remote import SessionPool

        sessions = SessionPool(env_url)
    try:
        per_batch = batch_scenarios if batched else 0
        workers = getattr(policy, "concurrency", 1)
        if workers > 1 and not batched:  # endpoint policies: episodes in flight at once, order kept
            if done or go_on:
                raise ValueError("a run in chunks plays groups in order; endpoint policies play concurrently")
            return _play_concurrently(policy, scenarios, samples, workers, bar, sessions, rubric=rubric, seed=seed)
        return _play_in_order(policy, scenarios, samples, bar, per_batch, sessions, done, go_on,
                              rubric=rubric, seed=seed)
    finally:
        if sessions is not None:
            sessions.close()
        if bar is not None:
            bar.close()


def _play_groups(policy: Policy, scenarios: Sequence[Scenario], samples: int, bar, batched: int, sessions, *,
                 rubric: RubricVersion, seed: int, start: int = 0) -> Iterator[list[Episode]]:
    """The episodes of each group in turn, from scenario ``start`` (a group boundary) on."""
    size = batched or 1
    for first in range(start, len(scenarios), size):
        group = scenarios[first:first + size]
        if batched:
            episodes = play_samples(policy, group, samples, rubric=rubric, seed=seed)
        else:
            episodes = [play_episode(policy, group[0], sample=k, rubric=rubric, seed=seed, sessions=sessions)
                        for k in range(samples)]
        if bar is not None:
            bar.update(samples * len(group))
        yield episodes


def _play_in_order(policy: Policy, scenarios: Sequence[Scenario], samples: int, bar, batched: int, sessions,
                   done: Sequence[Episode], go_on, *, rubric: RubricVersion, seed: int) -> list[Episode]:
    """run_eval's episodes group after group (``batched`` scenarios a group, 0: one episode at a time),
    after ``done``'s groups, until the set ends or ``go_on`` says stop."""
    size, played = batched or 1, len(done) // samples
    expected = [s.id for s in scenarios[:played] for _ in range(samples)]
    if len(done) % samples or (played % size and played < len(scenarios)) or [e.scenario.id for e in done] != expected:
        raise ValueError(f"the {len(done)} episodes already played are not the first whole groups of this run "
                         f"({size} scenario(s) x {samples} sample(s) a group, in scenario order)")
    episodes = list(done)
    for group in _play_groups(policy, scenarios, samples, bar, batched, sessions, rubric=rubric, seed=seed,
                              start=played):
        episodes += group
        if go_on is not None and not go_on(episodes):
            break
    return episodes


def _play_concurrently(policy: Policy, scenarios: Sequence[Scenario], samples: int, workers: int, bar,
                       sessions, *, rubric: RubricVersion, seed: int) -> list[Episode]:
    """run_eval's episodes with up to ``workers`` in flight (each has its own env and stream)."""
    jobs = [(s, k) for s in scenarios for k in range(samples)]
    episodes = []

    def one(job):
        return play_episode(policy, job[0], sample=job[1], rubric=rubric, seed=seed, sessions=sessions)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for episode in pool.map(one, jobs):
            episodes.append(episode)
            if bar is not None:
                bar.update(1)
    return episodes


def read_run(path: str | Path) -> list[Episode]:
    """The episodes of a run directory (or of a ``.jsonl`` file)."""
    path = Path(path)
    log = path / "episodes.jsonl" if path.is_dir() else path
    if not log.exists():
        raise ValueError(f"{path} holds no episodes.jsonl")
    return read_episodes(log).episodes


def compare_runs(a: str | Path, b: str | Path) -> Comparison:
    """Paired difference of avg_score between two run directories."""
    return compare_episodes(read_run(a), read_run(b), name_a=str(a), name_b=str(b))


def _run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m core.runs.eval",
        description="Play a policy over a scenario set; write DIR/episodes.jsonl and DIR/summary.json. "
        "Compare two runs with: python -m core.runs.eval compare DIR_A DIR_B [--json OUT].")
    p.add_argument("--policy", required=True,
                   help=f"scripted policy ({', '.join([*SCRIPTED, *CUED_NAMES])}), model:PATH for a chat checkpoint, "
                   "openai:BASE_URL#MODEL for an OpenAI-compatible endpoint (key from $OPENAI_API_KEY), or "
                   "decision:MODEL for the calibrated ask-or-act agent (any decision model)")
    p.add_argument("--scenarios", required=True, help=f"scenario set: {SPEC_HELP}")
    p.add_argument("--limit", type=int, default=None, help="play only the first N scenarios of the set")
    p.add_argument("--samples", type=int, default=1, help="episodes per scenario (K); the CI then resamples scenarios")
    p.add_argument("--rubric", choices=("v1", "v2", "v3"), default="v1",
                   help="v1: the published simulator and scoring (for published comparisons); v2: corrected; "
                   "v3: v2 plus a cost per question (for clarifylab-cued-v3)")
    p.add_argument("--seed", type=int, default=0, help="base seed of every episode's random stream")
    p.add_argument("--temperature", type=float, default=None, help="model policies: sampling temperature (default: the policy's)")
    p.add_argument("--top-p", type=float, default=None, help="model policies: nucleus sampling mass (default: the policy's)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="model policies: token limit per turn (default: the policy's)")
    p.add_argument("--batch-samples", action="store_true",
                   help="model policies: play a scenario's K samples as one batch (faster; seeded per scenario)")
    p.add_argument("--batch-scenarios", type=int, default=1,
                   help="with --batch-samples: put N consecutive scenarios' samples in one batch (seeded per group)")
    p.add_argument("--env-url", default=None,
                   help="play against a served environment (python -m core.clarify.serve at http://HOST:PORT) "
                   "instead of in process; the server's --rubric must match")
    p.add_argument("--concurrency", type=int, default=8, help="endpoint policies: episodes in flight at once")
    p.add_argument("--timeout", type=float, default=60.0, help="endpoint policies: seconds per request")
    p.add_argument("--retries", type=int, default=3,
                   help="endpoint policies: retries of a request after 429/5xx/timeouts/refusals (backoff 0.5 s, doubling)")
    p.add_argument("--out", required=True, help="run directory to write (created if missing)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar (shown on stderr for long runs)")
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="play in chunks: after this wall time, keep the groups played so far in DIR/partial.jsonl "
                   "and exit with status 3 (0: no limit)")
    p.add_argument("--resume", action="store_true",
                   help="go on from DIR/partial.jsonl, left by the same command with --max-minutes")
    return p


CHUNK_FLAGS = {"--resume": 0, "--max-minutes": 1}
"""Flags that split a run into chunks without changing its episodes: left out of the recorded command."""


def run_command(argv: Sequence[str]) -> list[str]:
    """``argv`` without the chunking flags: the command that plays the same episodes in one go."""
    kept, skip = [], 0
    for arg in argv:
        name = arg.split("=", 1)[0]
        if skip:
            skip -= 1
        elif name in CHUNK_FLAGS:
            skip = CHUNK_FLAGS[name] if "=" not in arg else 0
        else:
            kept.append(arg)
    return kept


def resumed(out: Path, command: list[str]) -> list[Episode]:
    """The episodes an interrupted run of ``command`` left in ``out`` (none if it left nothing)."""
    marker = out / "partial.json"
    if not marker.exists():
        return []
    recorded = json.loads(marker.read_text(encoding="utf-8"))["command"]
    then, now = _settings(recorded), _settings(command)
    if then != now:
        differ = ", ".join(f"{key} {then[key]!r} there, {now[key]!r} now" for key in sorted(now) if then[key] != now[key])
        raise ValueError(f"{marker} was left by another command ({differ}): {shlex.join(recorded)}")
    return read_episodes(out / "partial.jsonl").episodes


def _settings(command: list[str]) -> dict:
    """What decides a run's episodes: its parsed flags, in any order, less progress display and chunking."""
    parsed = vars(_run_parser().parse_args(command))
    return {key: value for key, value in parsed.items() if key not in ("no_progress", "resume", "max_minutes")}


def keep_partial(out: Path, command: list[str], episodes: Sequence[Episode]) -> None:
    """Write the groups played so far and the command that owns them (the marker last)."""
    out.mkdir(parents=True, exist_ok=True)
    write_episodes(out / "partial.jsonl", episodes)
    marker = {"version": 1, "command": command, "episodes": len(episodes)}
    (out / "partial.json").write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def _compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m core.runs.eval compare",
                                description="Paired difference of avg_score (A - B) over the scenarios both runs hold, "
                                "with its 95% bootstrap interval.")
    p.add_argument("a", help="run directory A (or its episodes.jsonl)")
    p.add_argument("b", help="run directory B (or its episodes.jsonl)")
    p.add_argument("--json", default=None, help="also write the comparison as JSON to this path")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["compare"]:
        args = _compare_parser().parse_args(argv[1:])
        try:
            result = compare_runs(args.a, args.b)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        out = result.record()
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        print(f"A={out['a']}  B={out['b']}  rubric {out['rubric']}  shared scenarios={out['n_shared']} "
              f"(only A {out['only_a']}, only B {out['only_b']})")
        print(f"mean A={out['mean_a']:.4f}  mean B={out['mean_b']:.4f}")
        print(f"A - B = {out['diff']:+.4f}  95% CI [{out['ci'][0]:+.4f}, {out['ci'][1]:+.4f}]")
        for column in ("family", "difficulty"):
            print(f"per {column}: " + ", ".join(f"{k} {v['mean']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}] (n {v['n']})"
                                                for k, v in out[f"per_{column}"].items()))
        return 0
    args = _run_parser().parse_args(argv)
    try:
        scenarios = load_scenarios(args.scenarios, args.limit)
        generation = Generation(temperature=args.temperature, top_p=args.top_p, max_new_tokens=args.max_new_tokens)
        options = ({"concurrency": args.concurrency, "timeout_s": args.timeout, "retries": args.retries}
                   if args.policy.startswith("openai:") else {})
        policy = make_policy(args.policy, generation=generation, **options)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not scenarios:
        print(f"error: scenario set {args.scenarios!r} (limit {args.limit}) is empty", file=sys.stderr)
        return 2
    out, whole = Path(args.out), run_command(argv)
    deadline = time.time() + 60.0 * args.max_minutes if args.max_minutes > 0 else None
    try:
        done = resumed(out, whole) if args.resume else []
        episodes = run_eval(policy, scenarios, samples=args.samples, rubric=args.rubric, seed=args.seed,
                            progress=not args.no_progress, batch_samples=args.batch_samples,
                            batch_scenarios=args.batch_scenarios, env_url=args.env_url, done=done,
                            go_on=(lambda so_far: time.time() < deadline) if deadline else None)
    except (EndpointError, ValueError, ConnectionError, OSError) as exc:  # misconfigured endpoint or server: no fallback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(episodes) < len(scenarios) * args.samples:
        keep_partial(out, whole, episodes)
        print(f"partial: {len(episodes)} of {len(scenarios) * args.samples} episodes kept in {out / 'partial.jsonl'}; "
              "run the same command with --resume to go on", file=sys.stderr)
        return 3
    command = shlex.join(["python", "-m", "core.runs.eval", *whole])
    summary = summarize(episodes, policy=args.policy, scenarios=args.scenarios, samples=args.samples,
                        seed=args.seed, limit=args.limit, command=command)
    write_run(out, episodes, summary)
    for name in ("partial.json", "partial.jsonl"):
        (out / name).unlink(missing_ok=True)
    lo, hi = summary.avg_score_ci
    print(json.dumps({"per_family": {k: v.mean for k, v in summary.per_family.items()}}))
    print(f"{summary.policy} on {summary.scenarios} ({summary.n} episodes, rubric {summary.rubric}): "
          f"avg_score {summary.avg_score:.4f} [{lo:.4f}, {hi:.4f}], completion {summary.completion_rate:.2%}, "
          f"{summary.cut.cut} of {summary.cut.turns} turns cut inside a tool call -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
