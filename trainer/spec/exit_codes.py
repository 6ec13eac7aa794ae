"""What the trainer's exit status tells the worker about why it ended (torch-free: the server reads it too).

Torchrun exits 1 whenever a rank fails and names the first failing rank's code under its "Root Cause" heading;
the server reads the code from there (server/services/job_runs.py).
"""

from __future__ import annotations

SPEC_ERROR_EXIT_CODE = 2  # the spec cannot run; the message names the field
# sysexits' EX_TEMPFAIL: a part of the platform (a reward service, its caller check) stayed unreachable for the
# whole outage window. Not the job's fault: the server retries it from its checkpoint, as for a lost host.
PLATFORM_OUTAGE_EXIT_CODE = 75
PLATFORM_OUTAGE_PREFIX = "platform outage: "  # the line the trainer prints before exiting with that code
