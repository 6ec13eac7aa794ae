"""``python -m tests.executors.audit_gradients --spec FILE --executors a,b --out FILE``: the gradient audit's captured
steps, saved instead of judged.

Each executor takes the audit's one step on its frozen trajectory (``trainer.audit.AuditSession``), and rank 0 saves
every optimizer update's flattened gradient (after synchronisation, before clipping; full tensors under FSDP), the
step's metrics and the executor's audit extras with ``torch.save``: so a test can set one run's gradients against
another's, e.g. two ranks under FSDP against one rank.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch


def main(argv: list[str]) -> int:
    from trainer.audit import AuditSession, flat_of
    from trainer.run import load_spec

    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--executors", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    names = args.executors.split(",")
    session = AuditSession(load_spec(args.spec), names)
    saved = {}
    for name in names:
        step = session.capture(name)
        saved[name] = {"gradients": [flat_of(g) for g in step.gradients], "metrics": step.metrics, "extra": step.extra}
    if session.dist.is_main:
        torch.save({"sharding": session.job.sharding.strategy, "executors": saved}, args.out)
    session.dist.barrier()
    session.dist.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
