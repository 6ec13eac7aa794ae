"""A model named by a hub id (`org/name`), downloaded with huggingface_hub's ``snapshot_download``; when the hub
cannot be reached, an error that names the model path, the hub and why, in place of the HTTP library's own
("ConnectError: [Errno -2] Name or service not known"), which names neither. The platform reads its line back
into the job's failure headline (server/services/root_cause.py)."""

from __future__ import annotations

from pathlib import Path

# The reasons the platform's headline repeats: the words before the first ";".
NO_NETWORK = "no network"
HUB_OFF = "the hub is off (HF_HUB_OFFLINE)"


class ModelDownloadError(OSError):
    """``model.path`` names a hub model that could not be downloaded from here."""


def download_model(path: str) -> Path:
    """The local snapshot of the hub model ``path`` (downloaded, or from the cache)."""
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(path))
    except LocalEntryNotFoundError as exc:  # neither the hub nor the cache has it: the hub was not reached
        # Raised without its chain: the traceback's last line, which the platform reads, is this one.
        raise ModelDownloadError(
            f"could not download {path} from the hub ({constants.ENDPOINT}): {unreached_because(exc)}"
        ) from None


def unreached_because(error: BaseException) -> str:
    """Why: "no network; ConnectError: ..." (the first cause huggingface_hub caught), or "the hub is off
    (HF_HUB_OFFLINE); ..." when it was not asked at all."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    causes: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and cause not in causes:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, OfflineModeIsEnabled) for c in causes):
        return f"{HUB_OFF}; {causes[-1]}"
    first = causes[1] if len(causes) > 1 else error
    return f"{NO_NETWORK}; {type(first).__name__}: {first}"
