"""The README is the map: its Quickstart is what CI runs, its tree names every module, its links resolve.

Files are listed with git (tracked, plus untracked ones git does not ignore), so a module added or
moved without updating the tree fails here, and the check works before and after a commit.
"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAPPED = ("core", "demo", "train", "bench")
MAX_LINES = 200  # the style guide's budget for a map; reference text lives in docs/


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    readme = README.read_text()
    assert ci in readme


def test_quickstart_has_two_commands():
    readme = README.read_text()
    block = readme.split("## Quickstart", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2
    assert "requirements.txt" in commands[0] and "app.py" in commands[0]
    assert "pytest" in commands[1]


def test_readme_fits_the_map_budget():
    assert len(README.read_text().splitlines()) <= MAX_LINES


def _repo_files(*paths: str) -> list[str]:
    """Tracked and untracked-but-not-ignored files under paths that exist on disk now."""
    listed: set[str] = set()
    for extra in ((), ("--others", "--exclude-standard")):
        done = subprocess.run(["git", "ls-files", *extra, "--", *paths], cwd=ROOT,
                              capture_output=True, text=True, check=True)
        listed.update(done.stdout.splitlines())
    # a file deleted but not yet staged (mid-move) is listed by git yet gone from the tree
    return sorted(p for p in listed if (ROOT / p).is_file())


def _tree_paths() -> set[str]:
    """Every path the README's file tree names, rebuilt from the tree's indentation."""
    block = README.read_text().split("## Files", 1)[1].split("```", 2)[1]
    paths, stack = set(), []
    for line in block.splitlines():
        marker = re.search(r"[├└]── ", line)
        if not marker:
            continue
        depth = marker.start() // 4  # each level is "│   " or "    "
        name = line[marker.end():].split("#", 1)[0].strip().rstrip("/")
        stack[depth:] = [name]
        paths.add("/".join(stack))
    return paths


def test_tree_names_every_module():
    tree = _tree_paths()
    modules = [p for p in _repo_files(*MAPPED) if p.endswith(".py")]
    assert modules, "git listed no modules; is this a git checkout?"
    missing = [p for p in modules if p not in tree]
    assert not missing, "README.md tree lacks: " + ", ".join(missing)


def test_tree_names_only_existing_modules():
    stale = [p for p in _tree_paths()
             if p.split("/", 1)[0] in MAPPED and p.endswith(".py") and not (ROOT / p).is_file()]
    assert not stale, "README.md tree names missing files: " + ", ".join(stale)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_relative_links_resolve():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code is not links
        for target in re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_readme_links_every_docs_page():
    linked = set(re.findall(r"\]\((docs/[^)#\s]+\.md)", README.read_text()))
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages and pages <= linked, "README.md does not link: " + ", ".join(sorted(pages - linked))


def test_docs_pages_named_in_code_and_pages_exist():
    """A ``docs/<page>.md`` named in a comment, docstring or page (not only a link) is a real page."""
    named = {}
    for rel in _repo_files("README.md", "docs", *MAPPED, "tests", "app.py"):
        if rel.endswith((".py", ".md", ".sh", ".yaml")):
            for page in re.findall(r"\bdocs/[\w-]+\.md\b", (ROOT / rel).read_text(errors="replace")):
                named.setdefault(page, rel)
    assert "docs/log.md" in named, "no docs page is named anywhere: the search is broken"
    missing = [f"{rel}: {page}" for page, rel in sorted(named.items()) if not (ROOT / page).is_file()]
    assert not missing, "named docs pages that do not exist:\n" + "\n".join(missing)


def test_reference_notes_are_named_outside_the_repo():
    """The published notes live in ../shared/reference, never in the repo: name them by that path."""
    bare = []
    for rel in _repo_files("README.md", "docs", *MAPPED, "app.py"):
        if rel.endswith((".py", ".md", ".sh", ".yaml")):
            text = (ROOT / rel).read_text(errors="replace")
            bare += [rel for _ in re.finditer(r"(?<!reference/)PLATFORM_NOTES", text)]
    assert not bare, "PLATFORM_NOTES named as if it were in the repo: " + ", ".join(sorted(set(bare)))
