"""Handlers of the Live play tab: unpack UI values, make one core call, format for components.

The session is a ``core.live.session.LiveSession`` in ``gr.State`` (one per browser session); the only
module global is ``MODELS``, the shared cache of loaded read-only models. Generating handlers
are generators: each yield streams the transcript so far, plus the generation's stop flag (a
``threading.Event`` kept in a per-session ``gr.State``, never copied); Stop sets that flag, the
model checks it after every token, and the generator itself reports the stopped turn. Closing the
generator (a closed tab) stops the model the same way.
"""

import threading
from html import escape

import gradio as gr

from core.decision.model import open_decider
from core.live import session as live_session
from core.live.streaming import GenerationSettings
from core.live.turns import model_moves, run_model
from core.models import availability, lists
from core.models.cache import ModelCache
from core.models.entries import public_deployment
from core.models.loader import ModelLoadError, declared_budget
from core.records import form_number
from core.runs import measured, transcripts
from demo import plots

MODELS = ModelCache(open_decider=open_decider)
"""Loaded models, shared read-only by every session (each loads once, on first use): the policies, and the
decision models the ask-or-act agent reads with (built as the Decisions tab builds them)."""
PUBLIC = public_deployment()
"""On a Hugging Face Space (SPACE_ID set) the local-folder box accepts only folders inside the
models folder: elsewhere its notes would tell any visitor which server paths exist."""
SOURCES = {"generated": "Generated (family, difficulty, seed)",
           "cued": "Cued requests (rubric v3; seeds 70000-70099 are the held-out set's)",
           "heldout": "Published held-out list"}
"""The scenario sources of ``core.live.session.SOURCES``, as the radio names them."""
AGENT_NOTE = ("The ask-or-act agent generates nothing: the decision model answers one choice question per "
              "required field about the request, and the agent asks the field of largest expected gain while that "
              "gain exceeds the question cost, then proposes the most probable values. Its beliefs show below the "
              "transcript; it is built for the cued requests (rubric v3).")
RUBRIC_OF_SOURCE = {"cued": "v3"}
"""The rubric a source is scored with when a visitor picks it (the others: v1 or v2, the visitor's pick)."""


def _found(entry) -> availability.Availability:
    """Can the pick play here: a policy loads as a model folder, an agent's decision model as the Decisions tab loads it."""
    if live_session.is_decision_agent(entry):
        return availability.check_decision(entry)
    return availability.check(entry, MODELS.cache_dir)


def model_choices(models_dir: str | None) -> list[tuple[str, str]]:
    """Picker entries: ``✓``/``✗`` availability, then the key; the playing policies, then the ask-or-act
    agent on each decision model (``decision:KEY``)."""
    out = []
    for entry in lists.all_entries(models_dir, kind="policy"):
        out.append((f"{'✓' if _found(entry).ok else '✗'} {entry.key} — {entry.note}", entry.key))
    for entry in lists.agent_entries(models_dir):
        key = lists.AGENT_PREFIX + entry.key
        out.append((f"{'✓' if _found(entry).ok else '✗'} {key} — the ask-or-act agent on this decision model "
                    f"({entry.note})", key))
    return out


def list_models(models_dir: str | None):
    """Page load: the picker, with the first available model picked."""
    choices = model_choices(models_dir)
    value = first_ready(choices)
    return gr.update(choices=choices, value=value), describe_model(models_dir, value, "")


def first_ready(choices: list[tuple[str, str]]) -> str | None:
    """The first available model's key (else the first key)."""
    ready = [key for label, key in choices if label.startswith("✓")]
    return ready[0] if ready else (choices[0][1] if choices else None)


def describe_model(models_dir: str | None, key: str | None, path: str | None) -> str:
    """Availability of the picked model (or typed folder), with how to fix it when missing."""
    try:
        entry = lists.policy_entry(models_dir, key, path, public=PUBLIC)
    except (KeyError, ValueError) as exc:
        return f"⚠️ {transcripts.inert(exc)}"
    found = _found(entry)
    agent = live_session.is_decision_agent(entry)
    quoted = measured.measured_note(measured.measured_runs(entry.location, prefix=lists.AGENT_PREFIX if agent
                                                           else "model:"))
    name = lists.AGENT_PREFIX + entry.key if agent else entry.key
    return (f"{'✓ available' if found.ok else '✗ unavailable'} · {transcripts.code(name)}: "
            f"{transcripts.inert(found.message)}" + (f"\n\n{AGENT_NOTE}" if agent else "")
            + (f"\n\n{transcripts.inert(quoted)}" if quoted else ""))


def declared_tokens(models_dir: str | None, key: str | None, path: str | None) -> int:
    """The slider's tokens per turn for the picked model: what its folder declares (``generation_config.json``,
    e.g. 256 for clarify-smollm2-grpo, whose plan calls run past 120), else the default; an unknown or
    broken pick keeps the default (describe_model says what is wrong)."""
    try:
        found = _found(lists.policy_entry(models_dir, key, path, public=PUBLIC))
        budget = declared_budget(found.path) if found.ok and found.path is not None else None
    except (KeyError, ValueError, ModelLoadError):
        budget = None
    return budget or GenerationSettings().max_new_tokens


def _budget(session: live_session.LiveSession | None) -> str:
    if session is None:
        return ""
    b = session.budget()
    speed = "".join(f"\n- {t.line()}" for t in session.timings)
    return (f"**Questions left:** {b['questions_left']} / {b['max_questions']} · "
            f"**Steps left:** {b['steps_left']} / {b['max_steps']}" + (f"\n\n**Speed**{speed}" if speed else ""))


def _card(session: live_session.LiveSession | None) -> str:
    if session is None:
        return "Start an episode to see its task."
    s = session.scenario
    return (f"**{transcripts.inert(s.id)}** · {s.family} · {s.difficulty} ({transcripts.inert(s.title)})\n\n"
            f"> {transcripts.inert(s.request)}\n\n"
            f"Required plan fields: {', '.join(f'`{k}`' for k in s.required_keys)}")


def _profile(session: live_session.LiveSession | None):
    """The hidden profile card: shown to the person in user mode and to spectators in watch mode."""
    if session is None or (session.mode == "agent" and not session.done):
        return gr.update(value=None, visible=False)
    rows = [[("★ " if f in session.scenario.critical_fields else "") + f, str(v)]
            for f, v in session.scenario.hidden_profile.items()]
    return gr.update(value=rows, visible=True)


def _end_panel(session: live_session.LiveSession | None, replays_dir: str):
    """Header, breakdown chart, profile-vs-plan marks, Replays link, download (after the end)."""
    if session is None or not session.done:
        return gr.update(visible=False), "", None, None, "", None
    episode = session.episodes[-1]
    log = live_session.save_run(session, replays_dir)
    n = len(session.episodes)
    link = (f"Saved as run <code>{escape(session.run_name)}</code> ({n} episode{'' if n == 1 else 's'}), private to "
            "this page: its Replays tab lists it, no other visitor's does (the server keeps the most recent "
            "session runs only; the download is your copy)")
    return (gr.update(visible=True), transcripts.episode_header(episode, session.run_name),
            plots.breakdown_bars(episode.breakdown, reasons=transcripts.zero_reasons(episode)),
            transcripts.marks_frame(transcripts.field_marks(episode)),
            link, str(log))


def _beliefs(session: live_session.LiveSession | None):
    """The ask-or-act agent's belief bars and note (hidden for every other player), as the Replays tab draws them."""
    if session is None or session.env.beliefs is None or not session.env.beliefs.steps:
        return gr.update(visible=False), "", None
    episode = session.episode()
    return gr.update(visible=True), plots.beliefs_note(episode), plots.belief_figure(episode)


def view(session: live_session.LiveSession | None, replays_dir: str, message: str | None = None):
    """Every output of the tab for one session state (``message`` replaces the status line)."""
    status = message if message is not None else (session.status if session else "")
    return (session, live_session.messages(session) if session else [], status, _budget(session), _card(session),
            _profile(session), *_end_panel(session, replays_dir), *_inputs(session), *_beliefs(session))


def rubric_for(source: str, rubric: str):
    """The rubric radio when the source changes: a cued source is scored with v3, the others not."""
    want = RUBRIC_OF_SOURCE.get(source)
    if want:
        return want
    return "v1" if rubric in RUBRIC_OF_SOURCE.values() else gr.update()


def _inputs(session: live_session.LiveSession | None):
    """Which input row shows: the answer box (user mode) or the agent's tools (agent mode)."""
    user = session is not None and session.pending is not None
    agent = session is not None and session.mode == "agent" and not session.done
    return gr.update(visible=user), gr.update(visible=agent)


def _number(value, field: str, whole: bool = True, blank: int | None = None) -> int | float:
    """A number box's value: ``blank`` when the box was cleared (else refused), a finite number, whole unless
    ``whole`` is False; anything else is a LiveError naming the box (int(None) and int(inf) raised out of Start)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if blank is None:
            raise live_session.LiveError(f"{field} is empty: type a number")
        return blank
    if (number := form_number(value, whole)) is None:
        kind = "a whole number" if whole else "a finite number"
        raise live_session.LiveError(f"{field} must be {kind}; got {str(value)[:40]!r}")
    return number


def start(session, replays_dir, models_dir, key, path, mode, source, family, difficulty, seed, heldout,
          rubric, temperature, max_new_tokens, sample_seed, int8):
    """Start button: a new episode in this session (the model is loaded by ``play``)."""
    try:
        settings = GenerationSettings(_number(temperature, "temperature", whole=False),
                                      _number(max_new_tokens, "max new tokens"),
                                      _number(sample_seed, "the sampling seed", blank=0), bool(int8))
        scenario = live_session.pick_scenario(source, family, difficulty, _number(seed, "the scenario seed", blank=0),
                                              _number(heldout, "the held-out index", blank=0))
        entry = None if mode == "agent" else lists.policy_entry(models_dir, key, path, public=PUBLIC)
        session = live_session.start(mode, scenario, rubric, entry, settings, previous=session)
    except (live_session.LiveError, KeyError, ValueError) as exc:
        return view(session, replays_dir, f"⚠️ {transcripts.inert(exc)}")
    return view(session, replays_dir)


def model_fields(mode: str) -> list[dict]:
    """Shown or hidden with the mode picked for the next Start: the model's picker, its note and the generation
    settings serve a playing model, and in agent mode none plays. (Continue and Stop stay: they act on the episode
    running now, whose model may still be writing.)"""
    return [gr.update(visible=mode != "agent")] * 3


def plan_template(session):
    """Agent mode: a plan skeleton with the required keys, for the plan editor."""
    return gr.update() if session is None or session.mode != "agent" else live_session.plan_skeleton(session)


def play(session, replays_dir, progress=gr.Progress()):
    """Let the model take its turns, streaming (until the end, a question for you, or Stop)."""
    stop = threading.Event()
    if session is not None and not model_moves(session):  # change nothing: Start's view is shown already, and a
        yield *[gr.skip()] * len(view(None, replays_dir)), stop  # move the person made meanwhile must stay
        return
    try:
        for state in run_model(session, MODELS, stop, lambda f, t: progress(f, desc=t)):
            yield *view(state, replays_dir), stop
    except (live_session.LiveError, ModelLoadError, RuntimeError) as exc:
        yield *view(session, replays_dir, f"⚠️ {transcripts.inert(exc)}"), stop


def request_stop(stop: threading.Event | None) -> str:
    """Stop button: ask the running generation to stop (it halts at its next token; the generation
    itself then reports the stopped turn in the status line)."""
    if stop is None or stop.is_set():
        return "nothing is generating"
    stop.set()
    return "stop requested"


def answer(session, replays_dir, text):
    """User mode: your answer to the model's question."""
    try:
        session = live_session.answer_question(session, text)
    except live_session.LiveError as exc:
        return view(session, replays_dir, f"⚠️ {transcripts.inert(exc)}")
    return view(session, replays_dir)


def _agent_move(session, replays_dir, tool, text=""):
    try:
        session = live_session.agent_move(session, tool, text)
    except live_session.LiveError as exc:
        return view(session, replays_dir, f"⚠️ {transcripts.inert(exc)}")
    return view(session, replays_dir)


def ask_user(session, replays_dir, question):
    """Agent mode: ask the simulated user one question."""
    return _agent_move(session, replays_dir, "ask_question", question)


def propose_plan(session, replays_dir, plan):
    """Agent mode: submit the plan (a JSON object); this ends the episode."""
    return _agent_move(session, replays_dir, "propose_plan", plan)


def task_info(session, replays_dir):
    """Agent mode: call get_task_info (free of the question budget, but a step)."""
    return _agent_move(session, replays_dir, "get_task_info")
