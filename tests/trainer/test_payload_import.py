"""The ingestion payload is a contract module the server imports: it must stay torch-free and server-free."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_ingestion_payload_imports_neither_torch_nor_another_room() -> None:
    probe = (
        "import sys, trainer.spec.ingest; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'server', 'worker', 'web', 'sfumato')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
