from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindgen.generate import BINDINGS_DIR
from bindgen.headersets import HEADER_SETS, FetchError, include_roots

BINDINGS = sorted(HEADER_SETS)


def load_manifest(name: str) -> dict:
    return json.loads((BINDINGS_DIR / name / "manifest.json").read_text())


@pytest.fixture(scope="session")
def fetched() -> None:
    """The pinned headers must be in the cache (``python -m bindgen fetch``); .ci/run fetches them."""
    for hs in HEADER_SETS.values():
        try:
            include_roots(hs)
        except FetchError as exc:
            pytest.fail(str(exc))


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.headers)
