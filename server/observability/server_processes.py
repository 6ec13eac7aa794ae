"""The live processes of a multi-process server, as its scrape sees them: which are alive, and the CPU,
memory and open files of each.

Every server process sets `sfumato_server_processes` (a `livesum` gauge) when its app is built, which leaves
a `gauge_livesum_<pid>.db` file in the shared metrics folder: those files name the server's processes. A
process that died (killed, or replaced by uvicorn) has its live-gauge files removed at the next scrape
(`mark_process_dead`), so live gauges count living processes only; its counters and histograms stay, as the
requests it served did happen.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from prometheus_client import multiprocess
from prometheus_client.core import Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from server.observability.metrics_dir import process_alive

LIVE_GAUGE_FILE = "gauge_live*_*.db"


def live_server_pids(folder: Path) -> list[int]:
    """The processes that keep live gauges in `folder`, after forgetting those that have died."""
    pids = {int(path.stem.rsplit("_", 1)[1]) for path in folder.glob(LIVE_GAUGE_FILE)}
    alive = sorted(pid for pid in pids if process_alive(pid))
    for pid in pids.difference(alive):
        multiprocess.mark_process_dead(pid, str(folder))
    return alive


class ServerProcessesCollector(Collector):
    """`process_*` of every live server process, labelled by `pid`; registered before the multiprocess
    collector so that a dead process's live gauges are gone before the folder is summed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for pid in live_server_pids(self.folder):
            for family in ProcessCollector(pid=lambda pid=pid: pid, registry=None).collect():
                merged = families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
                for sample in family.samples:
                    merged.add_sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value)
        yield from families.values()
