"""The host agent inside each worker: device inventory, registration, heartbeat.

It may import torch to list CUDA devices, never trainer code. On a host without CUDA it offers
`settings.worker_cpu_slots` CPU slots.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import socket
import subprocess
import threading
from pathlib import Path

from server.config import Settings
from server.db import session_scope
from server.services.hosts import DeviceInfo, heartbeat, register_host
from server.services.retry_policy import requeue_interrupted_jobs
from worker.hub_probe import hub_unreachable

log = logging.getLogger(__name__)

# Set when the worker starts shutting down: running trainers stop and their jobs go back to the queue.
SHUTDOWN = threading.Event()


def host_name(settings: Settings) -> str:
    return settings.worker_hostname or socket.gethostname()


def host_address() -> str:
    """An address other hosts can reach this one at (the rendezvous of multi-node jobs)."""
    try:
        return socket.gethostbyname(socket.getfqdn())
    except OSError:
        return "127.0.0.1"


def cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def nvidia_driver_present() -> bool:
    return Path("/proc/driver/nvidia").exists() or shutil.which("nvidia-smi") is not None


def cuda_devices() -> list[DeviceInfo]:
    """CUDA devices in PCI bus order (the order CUDA_VISIBLE_DEVICES uses for the trainer).

    Without an NVIDIA driver there are none, and the worker starts without importing torch.
    """
    if not nvidia_driver_present():
        return []
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        import torch
    except ImportError:
        return _nvidia_smi_devices()
    if not torch.cuda.is_available():
        return []
    devices = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        devices.append(DeviceInfo(index, "cuda", props.name, int(props.total_memory)))
    return devices


def _nvidia_smi_devices() -> list[DeviceInfo]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    devices = []
    for line in out.strip().splitlines():
        index, name, mib = (part.strip() for part in line.split(","))
        devices.append(DeviceInfo(int(index), "cuda", name, int(float(mib)) * 1024 * 1024))
    return devices


def hub_offline() -> bool:
    """Whether this worker (and the trainers it starts, which inherit its environment) runs with the model hub
    off, read as huggingface_hub reads it (huggingface_hub/constants.py: HF_HUB_OFFLINE, or the older
    TRANSFORMERS_OFFLINE, is one of 1/ON/YES/TRUE)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.upper() in {"1", "ON", "YES", "TRUE"}


def detect_devices(settings: Settings) -> list[DeviceInfo]:
    """The host's CUDA devices, or CPU slots when it has none."""
    found = cuda_devices()
    if found:
        return found
    model = cpu_model_name()
    return [DeviceInfo(i, "cpu", model, None) for i in range(max(1, settings.worker_cpu_slots))]


class HostAgent:
    """Registers this host once, then heartbeats from a daemon thread until stopped."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.name = host_name(settings)
        self.devices: list[DeviceInfo] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def register(self) -> None:
        """Store the host with its devices and whether its trainers can reach the model hub: not when it runs
        with the hub off (nothing is probed then), nor when the hub's endpoint does not answer a connection."""
        self.devices = detect_devices(self.settings)
        declared = hub_offline()
        unreachable = None if declared else hub_unreachable()
        if unreachable:
            log.warning("host %s cannot reach the model hub (%s)", self.name, unreachable)
        no_hub = declared or unreachable is not None
        with session_scope() as session:
            host = register_host(session, self.name, self.devices, address=host_address(), hub_offline=no_hub)
            interrupted = requeue_interrupted_jobs(session, host)
        log.info("host %s registered with %d %s device(s)", self.name, len(self.devices), self.devices[0].device_type)
        if interrupted:
            log.warning("jobs %s were interrupted on this host and went back to the queue", interrupted)

    def start(self) -> None:
        self.register()
        self._thread = threading.Thread(target=self._beat, name="sfumato-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_seconds):
            try:
                with session_scope() as session:
                    known = heartbeat(session, self.name)
                if not known:
                    self.register()
            except Exception:  # the database may be away for a moment; the next beat retries
                log.exception("heartbeat of host %s failed", self.name)
