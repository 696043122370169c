"""Natural tickets: determinism, family-disjoint splits, exact posteriors, shares, keywords, typos."""

import random
import re
from collections import Counter
from pathlib import Path

import pytest

from core.decision.data.more_ticket_families import MORE_ISSUE_FAMILIES, MORE_URGENCY_FAMILIES, WIDE_ISSUE_FAMILIES
from core.decision.data.natural import (
    PHRASEBOOKS, P_AMBIGUOUS, URGENCY_BOOKS, add_typos, deciding_families, deciding_family, draw_natural_ticket,
    family_counts, has_department_keyword, natural_contexts, natural_rows, split_profile,
)
from core.decision.data.rows import NOUL_OPTIONS
from core.decision.data.ticket_families import (
    DEPARTMENT_KEYWORDS, ISSUE_FAMILIES, SLOT_VALUES, SPLITS, URGENCY_FAMILIES, families_in,
)
from core.decision.data.triage import DEPARTMENTS, PRIORITIES, Q_DEPARTMENT, Q_PAGE, Q_PRIORITY

N = 400


def families_used(contexts, kinds=("family:",)) -> set[str]:
    """The names of the families (issue, or also urgency) that drew these tickets."""
    return {t.split(":", 1)[1] for rows in contexts for t in rows[0].tags if t.startswith(kinds)}


@pytest.fixture(scope="module")
def drawn() -> dict[str, list[list]]:
    return {split: natural_contexts(split, N, seed=0) for split in SPLITS}


def test_same_arguments_give_the_same_tickets_and_prefixes_are_stable():
    assert natural_contexts("val", 30, 5) == natural_contexts("val", 30, 5)
    assert natural_contexts("val", 30, 5)[:10] == natural_contexts("val", 10, 5)
    assert natural_contexts("val", 10, 5) != natural_contexts("val", 10, 6)


def test_splits_draw_from_distinct_streams(drawn):
    ids = [{rows[0].context_id for rows in drawn[s]} for s in SPLITS]
    texts = [{rows[0].state for rows in drawn[s]} for s in SPLITS]
    for a in range(3):
        for b in range(a + 1, 3):
            assert not ids[a] & ids[b]
            assert not texts[a] & texts[b]


def test_unknown_split_and_negative_count_are_refused():
    with pytest.raises(ValueError, match="unknown split"):
        natural_contexts("rl", 3, 0)
    with pytest.raises(ValueError, match=">= 0"):
        natural_contexts("test", -1, 0)


def test_every_department_has_at_least_eight_families_and_each_split_has_some():
    for department in DEPARTMENTS:
        mine = [f for f in ISSUE_FAMILIES if f.label == department]
        assert len(mine) >= 8
        assert {f.split for f in mine} == set(SPLITS)
        assert all(len(f.templates) >= 3 for f in mine)
    for priority in PRIORITIES:
        assert {f.split for f in URGENCY_FAMILIES if f.label == priority} == set(SPLITS)


def test_no_family_name_or_template_is_shared_between_splits():
    for table in (ISSUE_FAMILIES, URGENCY_FAMILIES):
        names = [f.name for f in table]
        assert len(names) == len(set(names))
        templates = [t for f in table for t in f.templates]
        assert len(templates) == len(set(templates))  # so no template text is in two families, or two splits
        for a in SPLITS:
            for b in SPLITS:
                if a < b:
                    assert not {t for f in families_in(a, table) for t in f.templates} & \
                        {t for f in families_in(b, table) for t in f.templates}


def test_phrasebook_v2_adds_six_training_families_a_department_and_leaves_val_and_test_alone():
    assert PHRASEBOOKS["v1"] == ISSUE_FAMILIES and PHRASEBOOKS["v2"] == ISSUE_FAMILIES + MORE_ISSUE_FAMILIES
    for department in DEPARTMENTS:
        more = [f for f in MORE_ISSUE_FAMILIES if f.label == department]
        assert len(more) == 6 and {f.split for f in more} == {"train"} and all(len(f.templates) >= 4 for f in more)
    names = [f.name for f in PHRASEBOOKS["v2"]]
    templates = [t for f in PHRASEBOOKS["v2"] for t in f.templates]
    assert len(names) == len(set(names)) and len(templates) == len(set(templates))
    for split in ("val", "test"):
        assert natural_contexts(split, 60, 0, "v2") == natural_contexts(split, 60, 0)
    v2 = natural_contexts("train", N, 0, "v2")
    used = families_used(v2)
    assert used == {f.name for f in families_in("train", PHRASEBOOKS["v2"])}  # all 48, the new 24 among them
    assert v2 != natural_contexts("train", N, 0)
    with pytest.raises(ValueError, match="unknown phrasebook 'v0'"):
        natural_contexts("train", 3, 0, "v0")


def test_phrasebook_extra_trains_on_v2s_extra_families_alone():
    assert {f.name for f in families_in("train", PHRASEBOOKS["extra"])} == {f.name for f in MORE_ISSUE_FAMILIES}
    for split in ("val", "test"):
        assert natural_contexts(split, 60, 0, "extra") == natural_contexts(split, 60, 0)
    extra = natural_contexts("train", N, 0, "extra")
    used = families_used(extra)
    assert used == {f.name for f in MORE_ISSUE_FAMILIES}  # no v1 training family: a v1-trained stage never read one


def test_phrasebook_fresh_draws_training_answers_from_families_a_v1_stage_never_read():
    v1_train = {f.name for f in families_in("train", ISSUE_FAMILIES + URGENCY_FAMILIES)}
    urgency = families_in("train", URGENCY_BOOKS["fresh"])
    assert {f.name for f in urgency} == {f.name for f in MORE_URGENCY_FAMILIES}
    for priority in PRIORITIES:
        assert sum(f.label == priority for f in urgency) == 3
    held_out = {t for f in URGENCY_FAMILIES if f.split != "train" for t in f.templates}
    assert not held_out & {t for f in MORE_URGENCY_FAMILIES for t in f.templates}
    for split in ("val", "test"):
        assert natural_contexts(split, 60, 0, "fresh") == natural_contexts(split, 60, 0)
    fresh = natural_contexts("train", N, 0, "fresh")
    used = families_used(fresh, ("family:", "urgency:"))
    assert used == {f.name for f in MORE_ISSUE_FAMILIES + MORE_URGENCY_FAMILIES} and not used & v1_train


def test_phrasebook_wide_gives_rl_twelve_families_a_department_none_a_v1_stage_read():
    issue = families_in("train", PHRASEBOOKS["wide"])
    assert {f.name for f in issue} == {f.name for f in MORE_ISSUE_FAMILIES + WIDE_ISSUE_FAMILIES}
    for department in DEPARTMENTS:
        assert sum(f.label == department for f in WIDE_ISSUE_FAMILIES) == 6
        assert sum(f.label == department for f in issue) == 12
    assert URGENCY_BOOKS["wide"] == URGENCY_BOOKS["fresh"]
    everything = ISSUE_FAMILIES + MORE_ISSUE_FAMILIES + WIDE_ISSUE_FAMILIES
    names, templates = [f.name for f in everything], [t for f in everything for t in f.templates]
    assert len(names) == len(set(names)) and len(templates) == len(set(templates))
    for split in ("val", "test"):
        assert natural_contexts(split, 60, 0, "wide") == natural_contexts(split, 60, 0)
    wide = natural_contexts("train", N, 0, "wide")
    used = families_used(wide)
    assert used == {f.name for f in issue}


def test_no_new_training_template_is_nearer_a_held_out_one_than_the_old_ones_are():
    """Phrasebook wide's families were written after reading val's and test's: each template stays farther (word
    TF-IDF cosine) from every val and test template than the nearest v1 or v2 training template already is."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    held = [t for f in ISSUE_FAMILIES if f.split != "train" for t in f.templates]
    old = [t for f in ISSUE_FAMILIES + MORE_ISSUE_FAMILIES if f.split == "train" for t in f.templates]
    new = [t for f in WIDE_ISSUE_FAMILIES for t in f.templates]
    words = TfidfVectorizer().fit(held + old + new)
    nearest = {name: cosine_similarity(words.transform(texts), words.transform(held)).max()
               for name, texts in (("old", old), ("new", new))}
    assert nearest["new"] < nearest["old"], nearest


def test_drawn_tickets_use_only_their_own_splits_families(drawn):
    split_of = {f"family:{f.name}": f.split for f in ISSUE_FAMILIES}
    split_of.update({f"urgency:{f.name}": f.split for f in URGENCY_FAMILIES})
    for split in SPLITS:
        used = {t for rows in drawn[split] for t in rows[0].tags if t in split_of}
        assert {split_of[t] for t in used} == {split}
        # and each split uses every family it owns (n = 400 is plenty)
        assert used == {t for t, s in split_of.items() if s == split}


def test_templates_fill_every_slot():
    for f in [*ISSUE_FAMILIES, *URGENCY_FAMILIES]:
        for t in f.templates:
            filled = t.format(**{k: v[0] for k, v in SLOT_VALUES.items()})
            assert "{" not in filled and "}" not in filled


def test_questions_and_options_are_triages_without_nota(drawn):
    for rows in drawn["test"]:
        department, priority, page = rows
        assert len({r.context_id for r in rows}) == 1 and {r.source for r in rows} == {"natural"}
        assert (department.question, priority.question, page.question) == (Q_DEPARTMENT, Q_PRIORITY, Q_PAGE)
        assert sorted(department.options) == sorted(DEPARTMENTS) and department.kind == "choice"
        assert priority.options == PRIORITIES and priority.kind == "score"
        assert page.options == NOUL_OPTIONS and page.kind == "noul"
        # page now iff P1/P0, with no noise
        assert page.label == (0 if priority.label >= 2 else 1)


def test_posteriors_are_one_hot_unless_ambiguous_then_half_half(drawn):
    for rows in (r for s in SPLITS for r in drawn[s]):
        department, priority, page = rows
        for row in (priority, page):
            assert row.posterior[row.label] == 1.0 and sum(row.posterior) == 1.0
        if "ambiguous" in department.tags:
            assert sorted(department.posterior) == [0.0, 0.0, 0.5, 0.5]
            assert department.posterior[department.label] == 0.5
            assert sum(t.startswith("family:") for t in department.tags) == 2
        else:
            assert department.posterior[department.label] == 1.0 and "clear" in department.tags


def test_ambiguous_share_and_label_balance(drawn):
    tickets = [rows for s in SPLITS for rows in drawn[s]]
    ambiguous = sum("ambiguous" in rows[0].tags for rows in tickets) / len(tickets)
    assert ambiguous == pytest.approx(P_AMBIGUOUS, abs=0.03)
    # an ambiguous ticket's label is its first or its second department, each about half the time
    for split in SPLITS:
        departments = Counter(r[0].options[r[0].label] for r in drawn[split])
        priorities = Counter(r[1].label for r in drawn[split])
        assert set(departments) == set(DEPARTMENTS) and min(departments.values()) >= 0.2 * N
        assert priorities == Counter({level: N // 4 for level in range(4)})  # balanced blocks of four


def test_ambiguous_label_is_drawn_half_half():
    rng = random.Random(1)
    firsts, n = 0, 0
    while n < 3000:
        t = draw_natural_ticket(rng, "x", "train", "BILLING", "P3_LOW")
        if t.ambiguous:
            n += 1
            firsts += t.department == "BILLING"
    assert firsts / n == pytest.approx(0.5, abs=0.03)


def test_no_keyword_rows_contain_no_keyword(drawn):
    tickets = [rows for s in SPLITS for rows in drawn[s]]
    keywords = [w for words in DEPARTMENT_KEYWORDS.values() for w in words]
    flagged = [rows for rows in tickets if "no_keyword" in rows[0].tags]
    for rows in flagged:
        assert all("no_keyword" in r.tags for r in rows)
        assert not any(w in rows[0].state.lower() for w in keywords)
    for rows in tickets:
        if "no_keyword" not in rows[0].tags:
            assert any(w in rows[0].state.lower() for w in keywords)
    # most tickets avoid the obvious words, and some still use them
    assert 0.5 < len(flagged) / len(tickets) < 0.9


def test_keyword_check_cases():
    assert has_department_keyword("Our INVOICE is wrong")  # case-insensitive
    assert has_department_keyword("the servers are down")  # a keyword inside a longer word
    assert not has_department_keyword("My card got hit twice for the same month.")


def test_tickets_are_short_varied_and_some_have_typos(drawn):
    texts = [rows[0].state for s in SPLITS for rows in drawn[s]]
    words = [len(t.split()) for t in texts]
    assert sum(w < 60 for w in words) / len(words) > 0.9
    assert min(words) < 15 and max(words) > 40
    typo = sum("typo" in rows[0].tags for s in SPLITS for rows in drawn[s]) / len(texts)
    assert 0.15 < typo < 0.4


TYPO_CASES = [
    # (text, seed, rate, expected): the exact output is part of the data's definition
    ("The invoice total is wrong", 0, 1.0, "The invocie totsl is wrpng"),  # swap, neighbour key, neighbour key
    ("The invoice total is wrong", 1, 0.5, "The innvoice toyal is wrong"),  # half the long words slip
    ("The invoice total is wrong", 0, 0.0, "The invoice total is wrong"),  # rate 0: unchanged
    ("I am ok, it is on", 0, 1.0, "I am ok, it is on"),  # no word of four letters: nothing to slip on
    ("Please HELP us today!", 3, 1.0, "Pleease HEPL us todday!"),  # case is kept
]


@pytest.mark.parametrize("text,seed,rate,expected", TYPO_CASES)
def test_add_typos_is_exact_on_a_fixed_seed(text, seed, rate, expected):
    assert add_typos(text, random.Random(seed), rate) == expected


def test_add_typos_keeps_first_letters_and_punctuation():
    text = "Everything takes ten or more seconds to load since Monday, honestly."
    for seed in range(50):
        typed = add_typos(text, random.Random(seed), 1.0)
        assert [w[0] for w in typed.split()] == [w[0] for w in text.split()]
        assert re.sub(r"[A-Za-z]", "", typed) == re.sub(r"[A-Za-z]", "", text)
    with pytest.raises(ValueError, match="typo rate"):
        add_typos(text, random.Random(0), 1.5)


def test_rows_of_a_given_ticket_are_exact():
    rng = random.Random(7)
    ticket = draw_natural_ticket(rng, "t1", "test", "SECURITY", "P0_CRITICAL")
    rows = natural_rows(ticket, random.Random(0))
    assert rows[0].context_id == "natural-t1" and all(r.state == ticket.text for r in rows)
    assert rows[1].label == 3 and rows[2].label == 0  # P0 -> page now
    assert {f.split for f in ticket.issue_families} == {"test"} and ticket.urgency_family.split == "test"


def test_split_profile_counts_what_was_drawn(drawn):
    profile = split_profile(drawn["test"])
    first = [rows[0] for rows in drawn["test"]]
    assert profile["tickets"] == N and profile["rows"] == 3 * N
    assert profile["ambiguous"] == sum("ambiguous" in r.tags for r in first) / N
    # the ceiling is 1 on clear tickets and 0.5 on ambiguous ones
    assert profile["department_ceiling"] == pytest.approx(1 - 0.5 * profile["ambiguous"])
    assert sum(profile["departments"].values()) == N and profile["page_now"] == 0.5
    assert set(profile["families"]) == {f.name for f in families_in("test", ISSUE_FAMILIES)}
    assert split_profile([]) == {"tickets": 0}


def test_the_docs_family_table_is_the_codes():
    """docs/decision_models.md's split table names exactly the families each split holds."""
    docs = (Path(__file__).resolve().parents[4] / "docs" / "decision_models.md").read_text()
    section = docs.split("## Natural tickets: a transfer test", 1)[1]
    documented = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] in [*DEPARTMENTS, *PRIORITIES]:
            for split, names in zip(SPLITS, cells[1:]):
                documented.update({name.strip(): (cells[0], split) for name in names.split(",")})
    coded = {f.name: (f.label, f.split) for f in [*ISSUE_FAMILIES, *URGENCY_FAMILIES]}
    assert documented == coded


def test_deciding_families_are_the_issue_families_for_departments_else_the_urgency():
    assert deciding_families(["family:a", "family:b", "urgency:u", "ambiguous", "department"]) == {"family:a", "family:b"}
    assert deciding_families(("family:a", "urgency:u", "priority")) == {"urgency:u"}
    assert deciding_families(["family:a", "urgency:u", "escalate"]) == {"urgency:u"}
    assert deciding_families(["two_cue"]) == set()  # a synthetic row names no family


def test_a_row_is_resampled_with_the_first_family_deciding_it():
    assert deciding_family(["family:b", "family:a", "urgency:u", "ambiguous", "department"]) == "family:b"
    assert deciding_family(["family:b", "urgency:u", "priority"]) == "urgency:u"
    assert deciding_family(["two_cue", "department"]) is None


def test_family_counts_count_the_families_deciding_each_question():
    tags = [["family:a", "family:b", "urgency:u", "department"], ["family:a", "urgency:u", "priority"],
            ["family:c", "urgency:v", "escalate"], ["family:c", "urgency:v", "department"], ["two_cue"]]
    assert family_counts(tags) == {"issue": 3, "urgency": 2}
    assert family_counts([]) == {"issue": 0, "urgency": 0}


def test_the_test_split_decides_with_few_families(drawn):
    """What the Calibration view's note states: test's departments come from 2 families a department, its
    priorities and page-now answers from one urgency family a priority."""
    rows = [r for rows in drawn["test"] for r in rows]
    issue = {f.name for f in families_in("test", ISSUE_FAMILIES)}
    urgency = {f.name for f in families_in("test", URGENCY_FAMILIES)}
    counts = family_counts(r.tags for r in rows)
    assert counts == {"issue": len(issue), "urgency": len(urgency)} == {"issue": 8, "urgency": 4}
