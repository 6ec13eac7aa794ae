"""The client commands' tests that talk to the app served in-process use the API harness of tests/server."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
