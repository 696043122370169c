"""One service session: what a served environment does between reset and the end of an episode.

The OpenEnv server (``core.clarify.serve``) keeps one ``ClarifySession`` per client connection and
only translates messages; everything a client can observe (results, rewards, termination) comes
from the ``ClarifyEnv`` inside, so a served episode is the in-process episode. This module needs
no openenv-core, so it is tested without a server.
"""

import random
import re

from core.clarify.environment import ENDED, ClarifyEnv, parse_plan, render_call
from core.clarify.families import DIFFICULTIES, FAMILIES
from core.clarify.rubrics import VERSIONS, RubricVersion
from core.clarify.scenarios import TRAIN_SEEDS, generate_scenario
from core.records import Episode, Scenario, ToolCall, text_problem, trusted

SCENARIO_ID = re.compile(r"seed(\d+)_([a-z_]+)_(easy|medium|hard)")
"""A generated scenario's id, ``seed{seed}_{family}_{difficulty}`` (the published form)."""
NO_EPISODE = "no episode yet: call reset(task_id=..., seed=...) first"
MAX_NESTING = 16
"""Deepest nesting a call's arguments may have (a plan is an object of short values: 2-3 levels)."""
SERVICE_POLICY = "service"
"""Policy name of a served episode (the server does not know who played; clients rename it)."""
MAX_SEED = 2**63 - 1
"""Largest seed a reset accepts (a 4,000-digit seed names no scenario anyone can replay)."""
INSTRUCTIONS = ("Ask clarifying questions with ask_question(question); the question budget is in "
                "questions_remaining. Then call propose_plan(plan) once, plan a JSON object string holding "
                "the family's required keys. Do not invent values for fields you never asked about.")
"""What the published server's reset and get_task_info answer under ``instructions`` (our words)."""
PUBLISHED_EXTRAS = {"get_task_info": ("task_id", "task_title", "instructions"),
                    "propose_plan": ("type", "expected_profile", "submitted_plan"), ENDED: ("episode_done",)}
"""Keys the wire adds beside ``ClarifyEnv``'s own result so the published clients find theirs
(``published_result``); ``own_result`` drops them again, so a remote policy sees the in-process result."""


def unsendable(name: str, arguments: dict) -> str | None:
    """Why a call, once played, could not be written back (a lone surrogate, nesting past ``MAX_NESTING``; in a plan
    sent as JSON text, in what it parses to), or None: the environment stepped, then every reply and state of the
    episode failed to serialize."""
    if why := text_problem(name):
        return f"its tool name {why}"
    plan = arguments.get("plan")
    parsed = parse_plan(plan)[0] if name == "propose_plan" and isinstance(plan, str) else None
    return _problem_in(arguments) or (_problem_in(parsed) if parsed is not None else None)


def _problem_in(value) -> str | None:
    stack = [(value, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_NESTING:
            return f"its arguments nest more than {MAX_NESTING} levels deep"
        texts = [*value.keys(), *value.values()] if isinstance(value, dict) else [value]
        for text in texts:
            if isinstance(text, str) and (why := text_problem(text)):
                return f"a text in it {why}"
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return None


def resolve_scenario(task_id: object = None, seed: object = None, rng: random.Random | None = None) -> Scenario:
    """The scenario a ``reset(task_id, seed)`` names.

    ``task_id`` is a difficulty ("easy", "medium", "hard"; None draws one) played with ``seed``
    (None draws one from the training seeds), or a scenario id such as
    ``seed10000_event_planning_easy`` (then ``seed`` must be None or that id's seed).
    """
    rng = rng or random.Random()
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        shown = f"an integer of {seed.bit_length()} bits" if isinstance(seed, int) and seed > MAX_SEED else repr(seed)[:40]
        raise ValueError(f"seed must be a non-negative integer (at most 2**63 - 1) or null, got {shown}")
    if task_id is None or task_id in DIFFICULTIES:
        difficulty = task_id if task_id is not None else rng.choice(DIFFICULTIES)
        return generate_scenario(rng.choice(TRAIN_SEEDS) if seed is None else seed, difficulty)
    if not isinstance(task_id, str):
        raise ValueError(f"task_id must be a string or null, got {type(task_id).__name__}")
    match = SCENARIO_ID.fullmatch(task_id)
    if match is None:
        raise ValueError(f"unknown task_id {task_id[:120]!r}; expected one of {', '.join(DIFFICULTIES)} "
                         "or a scenario id seed{SEED}_{FAMILY}_{DIFFICULTY}")
    digits, family, difficulty = match[1].lstrip("0") or "0", match[2], match[3]
    if len(digits) > 19 or int(digits) > MAX_SEED:  # read no further: Python refuses to read 4,301 digits at all
        raise ValueError(f"task_id {task_id[:120]!r} names a seed over 2**63 - 1")
    id_seed = int(digits)
    if seed is not None and seed != id_seed:
        raise ValueError(f"task_id {task_id!r} names seed {id_seed}, but seed={seed} was given")
    if family not in FAMILIES:
        raise ValueError(f"task_id {task_id!r} names unknown family {family!r}")
    scenario = generate_scenario(id_seed, difficulty)
    if scenario.family != family:
        raise ValueError(f"task_id {task_id!r}: seed {id_seed} as {difficulty} draws family "
                         f"{scenario.family!r}, not {family!r}")
    return scenario


class ClarifySession:
    """A client's environment: a fresh ``ClarifyEnv`` per reset, every call forwarded to it."""

    def __init__(self, rubric: RubricVersion = "v1", rng: random.Random | None = None):
        if rubric not in VERSIONS:
            raise ValueError(f"unknown rubric version {rubric!r}; expected v1 or v2")
        self.rubric = rubric
        self.env: ClarifyEnv | None = None
        self.episodes_started = 0
        self._rng = rng or random.Random()

    def reset(self, task_id: object = None, seed: object = None) -> dict:
        """Start a new episode; returns the published reset result (type "task", request, task_id,
        task_title, family, max_steps, questions_remaining, instructions) with our scenario id,
        rubric and what get_task_info would say beside it."""
        scenario = resolve_scenario(task_id, seed, self._rng)
        self.env = ClarifyEnv(scenario, self.rubric)
        self.episodes_started += 1
        s = scenario
        return {"type": "task", "request": s.request, "task_id": s.difficulty, "task_title": s.title,
                "family": s.family, "max_steps": s.max_steps, "questions_remaining": s.max_questions,
                "instructions": INSTRUCTIONS, "scenario_id": s.id, "rubric": self.rubric,
                "task_info": self.env.task_info()}

    def call(self, name: str, arguments: dict) -> tuple[dict, float, bool]:
        """One tool call -> (result, reward, done), exactly as ``ClarifyEnv.step`` answers it.

        The wire layer has already checked that the name is a string and the arguments an
        object; the environment judges the rest (unknown tool, missing argument, wrong type).
        The raw text logged for a served call is its plain-text form, as for scripted agents.
        """
        if self.env is None:
            return {"error": NO_EPISODE}, 0.0, False
        if why := unsendable(name, arguments):  # stepping would end in a reply, and a state, nobody can send
            return {"error": f"the call is not played: {why}"}, 0.0, self.env.done
        call = trusted(ToolCall, name=name, arguments=dict(arguments))
        turn = self.env.step(call, render_call(call))
        return turn.result, turn.reward, self.env.done

    @property
    def done(self) -> bool:
        return self.env is not None and self.env.done

    @property
    def steps(self) -> int:
        return 0 if self.env is None else self.env.steps

    def episode(self) -> Episode | None:
        """The current episode's record (scored once it has ended), or None before any reset."""
        return None if self.env is None else self.env.episode(SERVICE_POLICY)



def published_result(name: str, result: dict, scenario: Scenario | None) -> dict:
    """``ClarifyEnv``'s result with the published server's keys beside ours (``PUBLISHED_EXTRAS``):
    get_task_info's task_id/task_title/instructions, propose_plan's type "resolution",
    expected_profile and submitted_plan, and ``episode_done: true`` on the after-end error."""
    if result.get("error") == ENDED:
        return {**result, "episode_done": True}
    if "error" in result:
        return result
    if name == "get_task_info":
        return {**result, "task_id": scenario.difficulty, "task_title": scenario.title, "instructions": INSTRUCTIONS}
    if name == "propose_plan":
        return {"type": "resolution", **result, "expected_profile": result["hidden_profile"],
                "submitted_plan": result["plan"]}
    return result


def own_result(name: str, result: dict) -> dict:
    """A served result without the published extras: exactly what ``ClarifyEnv`` answered."""
    extras = PUBLISHED_EXTRAS[ENDED] if result.get("error") == ENDED else PUBLISHED_EXTRAS.get(name, ())
    return {k: v for k, v in result.items() if k not in extras}
