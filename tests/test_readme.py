"""The README is the front page: its commands match what the scripts and CI run, it stays short
(at most 250 lines) and its links lead to files that exist; every Markdown table of the README
and the docs has one header row.  (Its example runs in tests/test_docs_examples.py.)"""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    assert "bash scripts/test    # the test command" in readme
    assert "bash scripts/test" in (REPO / ".ci" / "run").read_text()
    assert "pytest -q tests" in (REPO / "scripts" / "test").read_text()


def test_main_job_fetches_only_what_it_needs():
    """The main job installs pygraphrt and runs the demo: the pinned headers (bindgen fetch), the
    cuda-bindings wheels and ``bindgen --check`` are the test command's; the README says what
    each downloads."""
    main = (REPO / "scripts" / "main").read_text()
    env = (REPO / "scripts" / "_env").read_text()
    test = (REPO / "scripts" / "test").read_text()
    test_env = (REPO / "scripts" / "_test_env").read_text()
    for text in (main, env):
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert "bindgen" not in code and "cuda-bindings" not in code and "dev," not in code, text
    assert "python -m pygraphrt demo" in main
    assert "bindgen fetch" in test_env and "cuda-bindings" in test_env
    assert ". scripts/_test_env" in test and "python -m bindgen --check" in test
    readme = (REPO / "README.md").read_text()
    setup = readme[readme.index("## Set-up on a fresh machine"):readme.index("## Install")]
    assert "main job downloads about 10 MB" in setup and "network access" in setup and "520 MB" in setup


def markdown_pages() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md"] + sorted(
        p for p in (REPO / "docs").rglob("*.md") if "_build" not in p.parts)


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_tables_have_one_header_row(page):
    """Every Markdown table: a header row, the separator right below it and nowhere else, and
    every row as wide as the header."""
    lines = page.read_text().splitlines()
    tables, cur, fence = [], [], False
    for i, line in enumerate(lines + [""]):
        if line.startswith("```"):
            fence = not fence
        if line.startswith("|") and not fence:
            cur.append((i + 1, line))
        elif cur:
            tables.append(cur)
            cur = []
    if page.name == "README.md":
        assert tables, "the README has its table of what pygraphrt covers"
    for table in tables:
        cells = [line.strip().strip("|").count("|") + 1 - line.count("\\|") for _, line in table]
        seps = [n for n, line in table if set(line) <= set("|-: ")]
        where = f"{page.relative_to(REPO)} line {table[0][0]}"
        assert seps == [table[1][0]], f"{where}: separator rows at {seps}"
        assert len(set(cells)) == 1, f"{where}: rows of {sorted(set(cells))} cells"


def test_readme_is_a_front_page():
    """At most 250 lines (the manual is the docs site), with the two set-up commands and links into
    the docs."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250, f"README.md has {len(readme.splitlines())} lines: move prose to docs/"
    setup = readme[readme.index("## Set-up on a fresh machine"):readme.index("## Install")]
    assert "bash scripts/main" in setup and "bash scripts/test" in setup
    linked = {target.split("#")[0] for target in LINK.findall(readme)}
    for page in ("docs/index.md", "docs/getting-started.md", "docs/guide/index.md", "docs/api/index.md", "CHANGELOG.md"):
        assert page in linked, f"the README links {page}"


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_readme_links_resolve():
    """Every relative link of the README names a file of the checkout (and a heading there, for a
    ``page.md#anchor`` link into the docs, as GitHub and MyST make anchors)."""
    readme = (REPO / "README.md").read_text()
    bad = []
    for target in LINK.findall(readme):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        file = REPO / path
        if not path or not file.is_file():
            bad.append(f"{target}: no such file")
        elif anchor and anchor not in {slug(h) for h in re.findall(r"^#+ (.*)$", file.read_text(), re.M)}:
            bad.append(f"{target}: no heading with that anchor in {path}")
    assert not bad, "README links that lead nowhere:\n" + "\n".join(bad)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MyST (myst_heading_anchors) make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_versions_agree_with_the_changelog():
    """pyproject's version, ``pygraphrt.__version__`` and the changelog's newest release are one."""
    import pygraphrt

    pyproject = (REPO / "pyproject.toml").read_text()
    (version,) = re.findall(r'^version = "([^"]+)"', pyproject, re.M)
    newest = re.findall(r"^## (\d+\.\d+\.\d+)", (REPO / "CHANGELOG.md").read_text(), re.M)[0]
    assert version == pygraphrt.__version__ == newest, (version, pygraphrt.__version__, newest)
