"""``python -m pygraphrt.conformance.selftest``: the suite's self-test (see :mod:`._selftest`)."""

from __future__ import annotations

import sys

from ._selftest import main

if __name__ == "__main__":
    sys.exit(main())
