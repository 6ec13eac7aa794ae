"""A failure that is the platform's, not the job's: one of its parts stayed unreachable for the whole outage window.

The trainer exits with PLATFORM_OUTAGE_EXIT_CODE on it (trainer/__main__.py), and the server retries the job from
its checkpoint as it does for a lost host, instead of failing it.
"""

from __future__ import annotations


class PlatformOutage(RuntimeError):
    """Raised by a client of a platform part (a reward service) after waiting out its outage window."""
