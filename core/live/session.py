"""Live play: one browser session's episodes as a deep-copyable record, stepped turn by turn.

Three modes. *watch*: a model plays a scenario against the simulated user. *user*: the model
asks and a person answers; the simulator's own rule (``user_sim.match_field``) decides which
field a question is about, and that field counts as revealed only when the person's answer
states its hidden value (``values_equal_v2``: the value as a whole phrase, no other value of the
field's vocabulary), so the score is what the simulator would have earned with the same
information. *agent*: a person asks the simulated user and submits the plan.

A ``LiveSession`` holds no model, thread or lock, so ``gr.State`` can copy it; a model's turns are
played by ``core.live.turns`` (a local model) and ``core.live.endpoint_turns`` (a chat endpoint),
which both step the session through ``apply_model_text`` and ``settle`` here. Every core call here
copies the session first and returns the copy. Finished episodes are saved as a run under
``<replays>/sessions/``, which only this session's page lists in its Replays tab
(``core.runs.session_runs``: private, bounded on disk).
"""

import copy
import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.clarify.cued_policies import belief_step, take_answer
from core.clarify.environment import ClarifyEnv, parse_plan
from core.clarify.families import FAMILIES
from core.clarify.rubrics import values_equal_v2
from core.clarify.scenarios import generate_cued, generate_scenario, load_scenarios
from core.clarify.toolcalls import parse_tool_call, render_tool_call
from core.clarify.user_sim import match_field, normalise_question
from core.live.streaming import GenerationSettings, TurnTiming
from core.models.entries import ModelEntry, public_deployment, shown_path
from core.models.lists import AGENT_PREFIX
from core.records import Episode, Generation, Scenario, ToolCall, text_problem
from core.runs.session_runs import SESSIONS_DIR, prune
from core.runs.summary import summarize, write_run
from core.runs.transcripts import chat_messages, fenced, inert, turn_messages

Mode = Literal["watch", "user", "agent"]
MODES: dict[str, str] = {"watch": "Watch", "user": "You are the user", "agent": "You are the agent"}
HELDOUT_SPEC = "clarifyrl-heldout"
SOURCES = ("generated", "cued", "heldout")
"""Where an episode's scenario comes from; a cued scenario is scored with rubric v3, the others with v1 or v2."""
FAMILY_SEARCH_LIMIT = 10_000
"""How many seeds past the given one to scan for a scenario of the chosen family."""
_SESSION_ID = re.compile(r"^live-[0-9a-f]{12}$")
SESSION_EPISODES = 100
"""Episodes one session (one saved run) holds: every move copies the session and every save rewrites its run, so
3,000 episodes in one made each move take a second and the run 48 MB, past the session-runs folder's byte bound."""


class LiveError(ValueError):
    """A live-play request that cannot be carried out; the message says why."""


@dataclass
class PendingQuestion:
    """User mode: the model's question, waiting for the person's answer."""

    raw: str
    call: ToolCall
    field: str | None
    """The field the simulator's rule says the question is about (None: no field)."""


@dataclass
class AgentState:
    """The ask-or-act agent's live state (``core.live.agent_turns``): its exact beliefs, the fields it
    asked, and the field whose answer it waits for (user mode). The rounded beliefs of each step are
    logged with the episode (``env.beliefs``), as the evaluation logs them."""

    fields: dict[str, list[float]]
    answered: list[str] = field(default_factory=list)
    asking: str | None = None


class HumanUserEnv(ClarifyEnv):
    """A ClarifyEnv whose questions are answered by a person (``next_answer``), scored by the
    simulator's field rule plus a check that the answer states the hidden value."""

    next_answer: str = ""

    def _ask(self, question: Any) -> tuple[dict, float]:
        result, reward = super()._ask(question)
        if "error" in result or result.get("over_cap"):
            return result, reward
        field_ = result["field_revealed"]
        result = {**result, "answer": self.next_answer, "simulator_answer": result["answer"]}
        if field_ is not None and not values_equal_v2(field_, self.next_answer, self.scenario.hidden_profile[field_]):
            del self.revealed[field_]  # asked about the field, but the answer did not state it
            result.update(field_revealed=None, answer_missed=field_)
            reward = self._ask_rewards["no_field_matched"]
        return result, reward


@dataclass
class LiveSession:
    """One browser session's live play: the current episode and the finished ones."""

    session_id: str
    mode: Mode
    entry: ModelEntry | None
    """The playing model's entry in ``core.models`` (None in agent mode)."""
    model_label: str
    """Policy identity written into episode logs (``model:<location>`` or ``human``)."""
    settings: GenerationSettings
    env: ClarifyEnv
    episodes: list[Episode] = field(default_factory=list)
    """Finished episodes of this session, in play order (the current one once it has ended)."""
    sample: int = 0
    """Sample index of the current episode: how many episodes the session had before it."""
    draft: str = ""
    """The model's text of the turn being generated (empty between turns)."""
    draft_tokens: int = 0
    pending: PendingQuestion | None = None
    status: str = ""
    stopped: bool = False
    """The last generation was stopped by the person."""
    timings: list[TurnTiming] = field(default_factory=list)
    """Speed of each model turn of the current episode (time to first token, tokens/s)."""
    sent: list[dict] = field(default_factory=list)
    """Endpoint play: each turn's assistant message as the endpoint sent it (``endpoint_policy.history``)."""
    earlier_runs: tuple[str, ...] = ()
    """Runs this browser session wrote under other rubrics (each rubric is a run of its own)."""
    agent: AgentState | None = None
    """The ask-or-act agent's state once it has read the request (None for other players)."""

    @property
    def scenario(self) -> Scenario:
        return self.env.scenario

    @property
    def done(self) -> bool:
        return self.env.done

    @property
    def run_name(self) -> str:
        """The Replays run this session's episodes form (one per rubric version)."""
        return f"{SESSIONS_DIR}/{self.session_id}-{self.env.rubric}"

    @property
    def owned_runs(self) -> tuple[str, ...]:
        """Every run this browser session has written: the Replays tab lists these to its page only."""
        return self.earlier_runs + ((self.run_name,) if self.episodes else ())

    def budget(self) -> dict[str, int]:
        """Questions and steps left in the current episode."""
        s, env = self.scenario, self.env
        return {"questions_left": s.max_questions - env.questions_asked, "max_questions": s.max_questions,
                "steps_left": s.max_steps - env.steps, "max_steps": s.max_steps}

    def episode(self) -> Episode:
        """The current episode as a record (scored once ended)."""
        extra = {"mode": self.mode, "live": True}
        generates = self.mode != "agent" and not is_decision_agent(self.entry)
        gen = self.settings.generation() if generates else Generation()
        gen = gen.model_copy(update={"extra": extra})
        return self.env.episode(self.model_label, sample=self.sample, generation=gen)


def is_decision_agent(entry: ModelEntry | None) -> bool:
    """Whether ``entry`` plays as the ask-or-act agent on a decision model (``decision:MODEL``)."""
    return entry is not None and entry.kind == "decision"


def new_session_id() -> str:
    return "live-" + secrets.token_hex(6)


def pick_scenario(source: str, family: str, difficulty: str, seed: int, heldout_index: int = 0) -> Scenario:
    """A generated scenario of (family, difficulty, seed), a cued one (``source="cued"``: rubric v3's
    requests with cues of known posterior), or a published held-out one by index.

    The generator draws the family from the seed, so a chosen family takes the first seed at or
    after ``seed`` whose scenario has that family ("any" takes ``seed`` itself).
    """
    if source not in SOURCES:
        raise LiveError(f"unknown scenario source {source!r}; expected one of {', '.join(SOURCES)}")
    if source == "heldout":
        scenarios = load_scenarios(HELDOUT_SPEC)
        if not 0 <= heldout_index < len(scenarios):
            raise LiveError(f"held-out index must be in 0..{len(scenarios) - 1}, got {heldout_index}")
        return scenarios[heldout_index]
    if family not in ("any", *FAMILIES):
        raise LiveError(f"unknown family {family!r}; expected any or one of {', '.join(FAMILIES)}")
    make = generate_cued if source == "cued" else generate_scenario
    for s in range(int(seed), int(seed) + FAMILY_SEARCH_LIMIT):
        scenario = make(s, difficulty)
        if family in ("any", scenario.family):
            return scenario
    raise LiveError(f"no {family} scenario within {FAMILY_SEARCH_LIMIT} seeds of {seed}")


def start(mode: Mode, scenario: Scenario, rubric: str = "v1", entry: ModelEntry | None = None,
          settings: GenerationSettings = GenerationSettings(), previous: "LiveSession | None" = None) -> LiveSession:
    """A new episode; the session (id, finished episodes) carries over from ``previous`` unless the rubric changed
    or it holds ``SESSION_EPISODES``: then a new session (and run) begins, and the page still owns the old run."""
    if mode not in MODES:
        raise LiveError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if mode != "agent" and entry is None:
        raise LiveError(f"{MODES[mode]} needs a model: pick one first")
    if (scenario.cues is not None) != (rubric == "v3"):
        raise LiveError(f"rubric {rubric} with {'a cued' if scenario.cues is not None else 'an uncued'} scenario: "
                        "cued requests are scored with v3 (its question cost is what they measure), the others "
                        "with v1 or v2")
    entry = entry if mode != "agent" else None
    env = (HumanUserEnv if mode == "user" else ClarifyEnv)(scenario, rubric)
    keep = (previous if previous is not None and previous.env.rubric == rubric
            and len(previous.episodes) < SESSION_EPISODES else None)
    owned = previous.owned_runs if previous is not None else ()
    return LiveSession(session_id=keep.session_id if keep else new_session_id(), mode=mode, entry=entry,
                       model_label=_label(entry), settings=settings,
                       env=env, episodes=list(keep.episodes) if keep else [],
                       sample=len(keep.episodes) if keep else 0, status=f"{MODES[mode]}: {scenario.id}",
                       earlier_runs=tuple(r for r in owned if keep is None or r != keep.run_name))


def _label(entry: ModelEntry | None) -> str:
    """The policy name in episode logs: an endpoint's spec as evaluation writes it, else ``model:<location>``
    (on a public deployment the location as ``shown_path`` shows it: no server layout in a visitor's run)."""
    if entry is None:
        return "human"
    if entry.source == "endpoint":
        return entry.location
    if is_decision_agent(entry):  # as the evaluation names it: decision:checkpoints/<folder> for a shipped one
        return AGENT_PREFIX + shown_path(entry.location)
    return f"model:{shown_path(entry.location) if public_deployment() else entry.location}"


# ---- a finished model turn -------------------------------------------------------------------


def _needs_person(session: LiveSession, call: ToolCall | None) -> bool:
    """User mode: a well-formed ask_question within budget is answered by the person."""
    env = session.env
    return (session.mode == "user" and call is not None and call.name == "ask_question"
            and set(call.arguments) == {"question"} and isinstance(call.arguments["question"], str)
            and env.questions_asked < session.scenario.max_questions)


def apply_model_text(session: LiveSession, raw: str,
                     parsed: tuple[ToolCall | None, str | None] | None = None) -> None:
    """Step the env with a finished model turn (``parsed``: its call and parse error, else parsed
    from ``raw`` here), or park it for the person (user mode)."""
    call, error = parsed if parsed is not None else parse_tool_call(raw)
    if _needs_person(session, call):
        question = normalise_question(call.arguments["question"][:200])
        asked = match_field(question, session.scenario.hidden_profile, session.env.rubric)
        session.pending = PendingQuestion(raw=raw, call=call, field=asked)
        session.status = "the model asks you a question: answer it below"
        return
    session.env.step(call, raw, error)


def settle(session: LiveSession) -> None:
    """After a step: when the episode has ended, file it with the session's episodes."""
    if session.done and len(session.episodes) == session.sample:
        session.episodes.append(session.episode())
        session.status = f"episode ended ({session.env.termination}): score {session.env.score:.3f}"


# ---- the person's moves -----------------------------------------------------------------------


MAX_ANSWER_CHARS = 80
"""Longest answer a person may give in "You are the user": what the shipped policies can take. They
learnt from the simulated user's answers (69 characters at most in every shipped run); measured on
4 scenarios each (docs/log.md), clarify-grpo and clarify-warmup keep the tool-call format after a
70-token answer (clarify-grpo also after 90) and lose it after 120 (every episode ``unparseable``).
Our byte-level tokenizer never makes more tokens than characters of plain text, so 80 characters
stay under that. Longer answers are refused, never cut; the answer box counts as the visitor types."""
MAX_QUESTION_CHARS = 300
"""Longest question a person may ask in "You are the agent" (the scenario's questions are one line)."""
MAX_PLAN_CHARS = 2_000
"""Longest plan a person may submit in "You are the agent": a plan is one JSON object of the
scenario's few fields (the largest in the shipped runs is 209 characters). Checked before the
JSON is parsed, so a pasted 20 MB plan is refused at once and nothing of it is stepped or saved."""


def answer_question(session: LiveSession, text: str) -> LiveSession:
    """User mode: the person's answer to the pending question; the env steps with it."""
    if session is None or session.pending is None:
        raise LiveError("there is no question waiting for an answer")
    if not isinstance(text, str) or not text.strip():
        raise LiveError("type an answer first")
    if why := text_problem(text):  # the model's next turn could not tokenize it: the episode would be lost
        raise LiveError(f"the answer {why}")
    if len(text.strip()) > MAX_ANSWER_CHARS:
        raise LiveError(f"answers are limited to {MAX_ANSWER_CHARS} characters (yours has {len(text.strip())}): "
                        "the shipped models learnt from the simulated user's answers, all under 70, and lose "
                        "the tool-call format after a much longer one; answer in a short phrase")
    session = copy.deepcopy(session)
    pending, session.pending = session.pending, None
    session.env.next_answer = text.strip()
    turn = session.env.step(pending.call, pending.raw)
    if session.agent is not None and session.agent.asking is not None:
        heard(session, turn.index, text.strip())
    session.status = "answer recorded"
    settle(session)
    return session


def heard(session: LiveSession, turn: int, answer: str) -> None:
    """The ask-or-act agent reads the answer to the field it asked and logs its beliefs after it."""
    agent = session.agent
    asked, agent.asking = agent.asking, None
    agent.answered.append(asked)
    take_answer(agent.fields, asked, answer)
    session.env.beliefs.steps.append(belief_step(session.env, turn, asked, agent.fields, set(agent.answered)))


PLAYED = {"ask_question": "question asked", "propose_plan": "plan proposed", "get_task_info": "task info read"}
"""The status line after a visitor's own move, in words (it read ``ask_question done``)."""


def agent_move(session: LiveSession, tool: str, text: str = "") -> LiveSession:
    """Agent mode: the person calls a tool (its text is the question or the plan JSON)."""
    if session is None:
        raise LiveError("start an episode first")
    if session.mode != "agent":
        raise LiveError("tool calls by hand are for the 'You are the agent' mode")
    if session.done:
        raise LiveError("the episode has ended: start a new one")
    if not isinstance(text, str):
        raise LiveError(f"{tool} takes text, got {type(text).__name__}")
    if why := text_problem(text):
        raise LiveError(f"the {'plan' if tool == 'propose_plan' else 'question'} {why}")
    if tool == "ask_question":
        if not text.strip():
            raise LiveError("type a question first")
        if len(text.strip()) > MAX_QUESTION_CHARS:
            raise LiveError(f"questions are limited to {MAX_QUESTION_CHARS} characters (yours has "
                            f"{len(text.strip())}); ask one short question at a time")
        call = ToolCall(name=tool, arguments={"question": text.strip()})
    elif tool == "propose_plan":
        if len(text) > MAX_PLAN_CHARS:
            raise LiveError(f"plans are limited to {MAX_PLAN_CHARS:,} characters (yours has {len(text):,}): a plan is "
                            "one JSON object with the scenario's required fields, each a short value")
        plan, error = parse_plan(text, session.env.rubric)
        if plan is None:
            raise LiveError(f"the plan must be a JSON object such as {{\"date\": \"today\"}}: {error}")
        if why := text_problem(json.dumps(plan, ensure_ascii=False)):  # a JSON escape such as "\\ud800"
            raise LiveError(f"the plan, read as JSON, {why}")
        call = ToolCall(name=tool, arguments={"plan": text.strip()})
    elif tool == "get_task_info":
        call = ToolCall(name=tool, arguments={})
    else:
        raise LiveError(f"unknown tool {tool!r}")
    session = copy.deepcopy(session)
    session.env.step(call, render_tool_call(call))
    session.status = PLAYED[tool]
    settle(session)
    return session


def plan_skeleton(session: LiveSession) -> str:
    """A plan with every required key and an empty value: a starting point for the person."""
    return json.dumps({key: "" for key in session.scenario.required_keys}, indent=1)


# ---- saving ---------------------------------------------------------------------------------


def save_run(session: LiveSession, replays_dir: str | Path) -> Path:
    """Write the session's finished episodes as a run under ``<replays_dir>/sessions/``, then drop
    the oldest session runs beyond the disk bound (``core.runs.session_runs.prune``).

    Returns the ``episodes.jsonl`` path. The folder name comes only from the session id, which
    is checked, so nothing is ever written outside the replays directory.
    """
    if not _SESSION_ID.match(session.session_id):
        raise LiveError(f"bad session id {session.session_id!r}")
    if not session.episodes:
        raise LiveError("no finished episode to save yet")
    base = Path(replays_dir).resolve()
    out = (base / session.run_name).resolve()
    if not out.is_relative_to(base):
        raise LiveError("refusing to write outside the replays directory")
    write_run(out, session.episodes, summarize(session.episodes, policy="live session", scenarios="live play"))
    prune(base, keep=session.run_name)
    return out / "episodes.jsonl"


# ---- what the page shows --------------------------------------------------------------------


def messages(session: LiveSession) -> list[dict]:
    """The transcript as chat messages: the Replays rendering of every step, then the turn
    being generated (or the question waiting for the person)."""
    episode = session.episode()
    if session.done:
        return chat_messages(episode)
    out = [{"role": "user", "content": inert(session.scenario.request)}]
    for turn in session.env.turns:
        out.extend(turn_messages(episode, turn))
    if session.draft:
        out.append({"role": "assistant", "content": f"✍️ *generating ({session.draft_tokens} tokens)*\n"
                    f"{fenced(session.draft)}"})
    if session.pending is not None:
        question = session.pending.call.arguments["question"]
        about = inert(session.pending.field) if session.pending.field else \
            "no field (the simulator would not reveal anything)"
        out.append({"role": "assistant", "content": inert(question)})
        out.append({"role": "assistant", "content": fenced(session.pending.raw.strip()),
                    "metadata": {"title": f"ask_question → waiting for your answer · about: {about}",
                                 "status": "pending"}})
    return out
