"""What a webhook receives: one JSON body that Slack's incoming webhooks show (`text`) and that a generic receiver
reads field by field, signed with the webhook's secret over the timestamp and the body.

Signature: `X-Sfumato-Signature: sha256=<hex HMAC-SHA256(secret, f"{timestamp}.{body}")>` with the Unix time in
`X-Sfumato-Timestamp`: the scheme of Stripe's and Slack's signed requests, so a receiver that refuses old
timestamps refuses a replayed body (docs/notifications.md shows the check).
"""

from __future__ import annotations

import hashlib
import hmac
import json

# The events a webhook receives.
JOB_SUCCEEDED = "job.succeeded"
JOB_FAILED = "job.failed"
JOB_REWARD_HACKING = "job.reward_hacking"  # the reward-hacking alarm (docs/evaluation.md), once per job
EXPERIMENT_ENDED = "experiment.ended"
TEST = "test"
EVENTS = (JOB_SUCCEEDED, JOB_FAILED, JOB_REWARD_HACKING, EXPERIMENT_ENDED, TEST)

SIGNATURE_HEADER = "X-Sfumato-Signature"
TIMESTAMP_HEADER = "X-Sfumato-Timestamp"


def payload_body(
    event: str, team: str, *, status: str, text: str, job_id: int | None = None, urls: dict[str, str] | None = None
) -> str:
    """The JSON sent for an event, compact and with sorted keys, so every attempt sends the same bytes."""
    body = {"text": text, "event": event, "team": team, "status": status, "job_id": job_id, "urls": urls or {}}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The X-Sfumato-Signature value for `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signed_headers(secret: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "sfumato-webhooks",
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
    }
