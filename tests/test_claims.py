"""Every measured figure in a results table is read back from the committed output its row links.

A table row or a paragraph in the README's Results or in docs/results.md that links files under results/
or replays/ is a claim about those files: each decimal, percentage and millisecond figure in it must
stand in one of them at the precision printed (an interval's 0.838 matches a stored 0.83821). A table
row with figures and no such link must call itself published. So a figure typed by hand, or left behind when a result
was re-run, fails here.
"""

import json
import math
import re
from pathlib import Path

import pytest

from tests.fixtures.json_leaves import leaves

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"README.md": "## Results", "docs/results.md": "# Results"}
SOURCES = ("results/", "replays/")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
_SET_NOT_MEASURED = ("<", ">", "≤", "≥", "=")
_FIGURE = re.compile(r"(?<![\w.])([+\-−]?\d+(?:,\d{3})*(?:\.(\d+))?)(\s?ms\b|%)?(?![\w.])")


def figures(text: str) -> list[tuple[float, float]]:
    """The (value, half a unit of its last printed digit) of each decimal, % and ms figure in text.

    Whole numbers without a unit (counts, seeds, K) are not figures, nor is a bound or a setting
    (after <, >, ≤, ≥ or =: a bar or a β, not a measurement); a percentage is a share.
    >>> figures("0.849 [0.838, 0.858], 98%, 448 ms, K = 4, bar ≥ 0.70")
    [(0.849, 0.0005), (0.838, 0.0005), (0.858, 0.0005), (0.98, 0.005), (448.0, 0.5)]
    """
    found = []
    text = _LINK.sub("", text)
    for m in _FIGURE.finditer(text):
        number, decimals, unit = m.group(1), m.group(2), (m.group(3) or "").strip()
        if (decimals is None and not unit) or text[:m.start()].rstrip().endswith(_SET_NOT_MEASURED):
            continue
        value = float(number.replace("−", "-").replace(",", ""))
        half = 0.5 * 10.0 ** -len(decimals or "")
        if unit == "%":
            value, half = value / 100, half / 100
        found.append((value, half))
    return found


def _stored(path: Path) -> list[float]:
    """Every number a committed output holds: JSON values, or the numbers written in a text file."""
    text = path.read_text()
    if path.suffix == ".json":
        return [float(leaf) for leaf in leaves(json.loads(text))
                if isinstance(leaf, (int, float)) and not isinstance(leaf, bool) and math.isfinite(leaf)]
    return [float(n.replace("−", "-")) for n in re.findall(r"[+\-−]?\d+(?:\.\d+)?", text)]


def unheld(text: str, stored: list[float]) -> list[float]:
    """The figures of ``text`` that no stored number equals at their printed precision."""
    return [value for value, half in figures(text) if not any(abs(value - s) <= half + 1e-9 for s in stored)]


def claimed_rows(page: str) -> list[tuple[int, str, list[Path]]]:
    """(first line number, unit, linked outputs) for each unit with figures on the page's results part: a
    table row, or a paragraph of prose (its lines joined) that links a committed output."""
    path = ROOT / page
    heading = PAGES[page]
    text = path.read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading)) if page == "README.md" else -1
    first = text[:start].count("\n") + 1
    units, prose = [], []
    for offset, line in enumerate(text[start:end if end > 0 else None].splitlines() + [""]):
        if line.startswith("|"):
            units.append((first + offset, line, True))
        elif line.strip() and not line.startswith("#"):
            prose.append((first + offset, line))
            continue
        if prose:  # a paragraph ends at a blank line, a heading or a table
            units.append((prose[0][0], " ".join(part for _, part in prose), False))
            prose = []
    rows = []
    for number, unit, is_row in units:
        if (is_row and set(unit) <= set("|-: ")) or not figures(unit):
            continue
        linked = [(path.parent / target).resolve() for target in _LINK.findall(unit)]
        outputs = [p for p in linked if p.is_file() and str(p.relative_to(ROOT)).startswith(SOURCES)]
        if is_row or outputs:  # prose without a source is explanation, not a claim this check can read
            rows.append((number, unit, outputs))
    return rows


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_figure_is_read_from_its_linked_output(page):
    rows = claimed_rows(page)
    assert rows, f"{page} has no results table rows: the parser or the page is broken"
    wrong = []
    for number, line, outputs in rows:
        if not outputs:
            if "published" not in line:
                wrong.append(f"{page}:{number}: figures without a committed source and not marked published")
            continue
        names = ", ".join(str(p.relative_to(ROOT)) for p in outputs)
        wrong += [f"{page}:{number}: {value:g} is in none of {names}"
                  for value in unheld(line, [v for p in outputs for v in _stored(p)])]
    assert not wrong, "\n".join(wrong)


def test_published_rows_hold_the_published_figures(reference_dir):
    """A row marked published reads its figures from the published runs summary (../shared/reference)."""
    stored = _stored(reference_dir / "clarifyrl" / "runs_summary.json")
    rows = [(page, number, unit) for page in sorted(PAGES) for number, unit, outputs in claimed_rows(page)
            if not outputs]
    assert rows, "no published rows found: the parser or the pages changed"
    wrong = [f"{page}:{number}: {value:g}" for page, number, unit in rows for value in unheld(unit, stored)]
    assert not wrong, "published figures not in runs_summary.json: " + ", ".join(wrong)


def test_a_figure_missing_from_its_source_is_caught(tmp_path):
    """The check can fail: a row claiming a number its output does not hold is reported."""
    source = tmp_path / "out.json"
    source.write_text(json.dumps({"accuracy": 0.8487, "ci": [0.8382, 0.8585], "ms": 448.3}))
    stored = _stored(source)
    assert unheld("0.849 [0.838, 0.858] in 448 ms", stored) == []
    assert unheld("0.850 [0.838, 0.858]", stored) == [0.850]


def test_figures_reads_signs_units_and_skips_counts():
    assert figures("−0.023 [-0.045, +0.004]") == [(-0.023, 0.0005), (-0.045, 0.0005), (0.004, 0.0005)]
    assert figures("1,200 rows, seed 2, 0.6B, v2, [v1](x/0.5.json)") == []
    assert figures("1,000 ms; 2.12") == [(1000.0, 0.5), (2.12, 0.005)]
    assert figures("bar ≤ +0.01, < 1,000 ms, ≥ 0.70 held: 0.547, β=0.2") == [(0.547, 0.0005)]
