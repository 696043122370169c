"""Handlers of the Replays tab: unpack UI values, make one core call, format for components.

One handlers module per tab (not one shared ``demo/handlers.py``) so that tabs built in parallel
never edit the same file. Every function here is plain Python and testable without launching:
``root`` is the replays directory (a ``gr.State``), ``uploads`` the session's uploaded runs
(a ``gr.State`` dict name -> ``LoadedRun``).
"""

from urllib.parse import urlencode

import gradio as gr
import pandas as pd

from core.runs import comparison
from core.runs import episode_table as table
from core.runs import replays
from core.runs import transcripts
from core.runs import uploads as uploads_store
from core.runs.session_runs import OWNED
from core.runs.episode_log import EpisodeLogError
from demo import plots

EPISODE_CHOICES_MAX = 1000
"""Episode picker entries; more filtered rows than this are reachable by clicking the table."""
GATES = ["any", "pass", "fail"]
PICK_HINT = "Pick an episode: click a row of the table, or choose one in the Episode list."
RUN_COLUMNS = ["run", "policy", "rubric", "scenarios", "episodes", "avg score", "95% interval", "completion"]


def no_pair() -> tuple[dict, dict]:
    """The side-by-side chats when there is no shared scenario to show (labels reset, so none names an
    old run); fresh dicts on every call, since gradio consumes the updates a handler returns."""
    return gr.update(value=[], label="Run a"), gr.update(value=[], label="Run b")



def _runs_frame(infos: list[replays.RunInfo]) -> pd.DataFrame:
    rows = [{"run": r.name, "policy": r.policy, "rubric": r.rubric, "scenarios": r.scenarios,
             "episodes": r.n, "avg score": "" if r.avg_score is None else f"{r.avg_score:.3f}",  # 0.780, not 0.78
             "95% interval": "—" if r.ci is None else f"{r.ci[0]:.3f} – {r.ci[1]:.3f}",  # one scenario: none
             "completion": None if r.completion_rate is None else f"{r.completion_rate:.0%}"}
            for r in infos]
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def episode_key(run: str, episode_id: str) -> str:
    """The episode picker's value: ``run|episode`` (run names never hold ``|``)."""
    return f"{run}|{episode_id}"


def on_load(root: str, request: gr.Request | None = None):
    """Page load: list the runs and read ``?run=&episode=`` from the URL (else open the landing run's first episode)."""
    infos = replays.discover_runs(root)
    names = [r.name for r in infos]
    query = dict(request.query_params) if request is not None else {}
    run = query.get("run") if query.get("run") in names else replays.landing_run(names)
    asked = query.get("run")
    note = (f"⚠ No run named {transcripts.inert(asked)}; showing {transcripts.inert(run)} instead."
            if asked and asked != run else "")
    episode = query.get("episode") or (replays.first_episode(root, run) if run else None)
    key = episode_key(run, episode) if run and episode else None
    b = replays.companion_run(names, run)
    return (_runs_frame(infos), gr.update(choices=names, value=[run] if run else []),
            gr.update(choices=names, value=run), gr.update(choices=names, value=b), key, note)


def _filters(runs, families, difficulties, score_min, score_max, gate, terminations, text):
    return table.Filters(runs=tuple(runs or ()), families=tuple(families or ()),
                           difficulties=tuple(difficulties or ()), score_min=float(score_min),
                           score_max=float(score_max), gate=gate or "any",
                           terminations=tuple(terminations or ()), text=text or "")


def _known(root, uploads, runs):
    """The picked runs that exist, and one warning line naming the others (left out, not fatal)."""
    known, problems = replays.known_runs(root, runs or [], uploads)
    warn = "" if not problems else "⚠ " + "; ".join(transcripts.inert(p) for p in problems) + \
        " (left out: remove it from Runs, or pick a run from the list)"
    return known, warn


def filter_episodes(root, uploads, runs, families, difficulties, score_min, score_max, gate,
                    terminations, text):
    """Episode table of the picked runs under the filters, plus the episode picker's choices.

    A picked name that is no run (a typo) is left out with a warning; the other runs stay shown."""
    known, warn = _known(root, uploads, runs)
    filters = _filters(known, families, difficulties, score_min, score_max, gate, terminations, text)
    try:
        rows = replays.filtered_rows(root, known, filters, uploads)
    except replays.VIEW_ERRORS as exc:
        return None, gr.update(choices=[]), f"⚠ {transcripts.inert(exc)}"
    head = rows.head(EPISODE_CHOICES_MAX)
    picks = [(f"{e} · {s:.3f} · {r}", episode_key(r, e))
             for r, e, s in zip(head["run"].astype(str), head["episode"], head["score"])]
    count = f"**{len(rows)}** episode{'' if len(rows) == 1 else 's'}" + (f" (picker lists the first {EPISODE_CHOICES_MAX}; click a row for the rest)"
                                           if len(rows) > EPISODE_CHOICES_MAX else "")
    if not picks:  # nothing passes: the picker empties (it had kept the last key, shown raw, and its episode)
        count += ": no episode passes these filters"
    picker = gr.update(choices=picks) if picks else gr.update(choices=[], value=None)
    return table.display_frame(rows), picker, f"{warn}\n\n{count}" if warn else count


def pick_row(shown: pd.DataFrame, evt: gr.SelectData):
    """A click on a table row picks that row's episode (the clicked values, so sorting is safe)."""
    values = evt.row_value or shown.iloc[evt.index[0]].tolist()
    columns = list(shown.columns)
    return episode_key(str(values[columns.index("run")]), str(values[columns.index("episode")]))


def show_episode(root, uploads, key):
    """Header, chat transcript, profile-vs-plan marks, breakdown chart and link of one episode."""
    key = key if isinstance(key, str) else ""  # an API caller's number or object picks nothing
    run, _, episode_id = key.partition("|")
    no_marks = transcripts.marks_frame([])
    if not key:
        return PICK_HINT, [], no_marks, plots.breakdown_bars(None, "no episode picked"), ""
    try:
        episode = replays.find_episode(root, run, episode_id, uploads)
    except replays.VIEW_ERRORS as exc:
        return f"⚠ {transcripts.inert(exc)}", [], no_marks, plots.breakdown_bars(None, "no episode to show"), ""
    marks = transcripts.marks_frame(transcripts.field_marks(episode))
    query = urlencode({"run": run, "episode": episode_id})  # the # of an episode id travels as %23
    link = "" if run.startswith(replays.UPLOAD_PREFIX) else f"Permalink: [{transcripts.inert('?' + query)}](?{query})"
    return (transcripts.episode_header(episode, run), transcripts.chat_messages(episode), marks,
            plots.breakdown_bars(episode.breakdown, recorded=episode.recorded,
                                 reasons=transcripts.zero_reasons(episode)), link)


def upload_log(root, file, keep_valid, uploads, picked):
    """Read an uploaded log (our JSONL or a published trace file) into this session's runs.

    The last output clears the upload box, ready for the next file."""
    if not file:
        return uploads, "", gr.update(), gr.update(), gr.update(), None
    try:
        run = replays.load_upload(file, keep_valid=bool(keep_valid))
    except EpisodeLogError as exc:
        return uploads, f"✗ {transcripts.inert(exc)}", gr.update(), gr.update(), gr.update(), None
    except (OSError, MemoryError) as exc:  # the box must recover whatever the file was
        return (uploads, f"✗ could not read this file ({type(exc).__name__}); upload another",
                gr.update(), gr.update(), gr.update(), None)
    session = uploads_store.session_of((uploads or {}).values())
    key = uploads_store.STORE.put(session, run)
    held = {n: k for n, k in (uploads or {}).items()
            if n != run.name and (k == OWNED or uploads_store.STORE.holds(k))}
    uploads = {**held, run.name: key}  # names of uploads the store dropped leave the pickers too
    names = replays.run_names(root, uploads)
    return (uploads, replays.upload_note(run), gr.update(choices=names, value=[*(picked or []), run.name]),
            gr.update(choices=names), gr.update(choices=names), None)


def adopt_session_runs(root, uploads, live_session):
    """The Replays tab opened: this page's own Live play runs join its runs (no other page lists them)."""
    owned = live_session.owned_runs if live_session is not None else ()
    uploads = {**(uploads or {}), **{name: OWNED for name in owned}}
    names = replays.run_names(root, uploads)
    return uploads, gr.update(choices=names), gr.update(choices=names), gr.update(choices=names)


def open_session_episode(root, uploads, live_session, picked):
    """Live play's "Open in Replays": this page's Replays tab, at the session's last episode."""
    uploads, *choices = adopt_session_runs(root, uploads, live_session)
    if live_session is None or not live_session.episodes:
        return gr.update(), uploads, *choices, gr.update()
    run, episode = live_session.run_name, live_session.episodes[-1].id
    picked = [*[p for p in picked or [] if p != run], run]
    return (gr.update(selected="replays"), uploads, gr.update(choices=choices[0]["choices"], value=picked),
            *choices[1:], episode_key(run, episode))


def _export_rows(root, uploads, runs, filter_values):
    """The rows an export writes; a picked name that is no run stops the export with its reason."""
    known, warn = _known(root, uploads, runs)
    if warn:
        raise gr.Error(f"Nothing exported: {'; '.join(replays.known_runs(root, runs or [], uploads)[1])}. "
                       "Remove it from Runs, then export again.", print_exception=False)
    if not known:
        raise gr.Error("Nothing exported: pick at least one run.", print_exception=False)
    return replays.filtered_rows(root, known, _filters(known, *filter_values), uploads)


def release_uploads(uploads: dict | None) -> None:
    """A closed session: free its uploads now rather than when the store needs the room."""
    uploads_store.STORE.release([k for k in (uploads or {}).values() if isinstance(k, str)])


def export_table(root, uploads, runs, *filter_values):
    """Write the filtered table to a CSV file for download."""
    rows = _export_rows(root, uploads, runs, filter_values)
    return gr.update(value=str(table.export_csv(table.display_frame(rows))), visible=True)


def export_episodes(root, uploads, runs, *filter_values):
    """Write the filtered episodes to a JSONL log for download."""
    rows = _export_rows(root, uploads, runs, filter_values)
    return gr.update(value=str(replays.export_jsonl(replays.rows_episodes(root, rows, uploads))),
                     visible=True)


def overview(root, uploads, runs, *filter_values):
    """The four overview charts for the picked runs under the filters."""
    known, _ = _known(root, uploads, runs)
    try:
        rows = replays.filtered_rows(root, known, _filters(known, *filter_values), uploads)
    except replays.VIEW_ERRORS:
        rows = table.episode_table([])
    components, weights = table.rubric_components(rows)  # v3 runs chart v3's own components
    return (plots.family_bars(table.family_scores(rows)), plots.score_histogram(rows),
            plots.questions_histogram(rows),
            plots.component_bars(table.component_means(rows, components), weights))


def compare(root, uploads, run_a, run_b):
    """Paired comparison of two runs on their shared scenarios, with the largest gap's two episodes.

    The transcripts come back with the table, so switching a run always refreshes them, even
    when the scenario picked stays the same (then the scenario picker fires no change)."""
    try:
        comp = replays.compare_named(root, run_a, run_b, uploads)
    except replays.VIEW_ERRORS as exc:
        return (f"⚠ {transcripts.inert(exc)}", None,
                plots.difference_bars(pd.DataFrame(), run_a, run_b, "not compared: the note above says why"),
                gr.update(choices=[], value=None), *no_pair())
    gap = comparison.largest_gap(comp)
    shown = comp.table[comparison.SHOWN_COLUMNS].set_axis(comparison.SHOWN_HEADERS, axis=1)
    return (comparison.comparison_note(comp, run_a, run_b), shown,
            plots.difference_bars(comp.table, run_a, run_b),
            gr.update(choices=list(comp.table["scenario"]), value=gap),
            *(compare_episode(root, uploads, run_a, run_b, gap) if gap else no_pair()))


def compare_episode(root, uploads, run_a, run_b, scenario):
    """The two runs' episodes of one shared scenario, as chats side by side."""
    try:
        ep_a, ep_b = replays.compared_episodes(root, run_a, run_b, scenario, uploads)
    except replays.VIEW_ERRORS:
        return [], []
    return (gr.update(value=transcripts.chat_messages(ep_a), label=f"a: {run_a} · score {ep_a.score:.3f}"),
            gr.update(value=transcripts.chat_messages(ep_b), label=f"b: {run_b} · score {ep_b.score:.3f}"))
