"""The key page-session cookies are signed with (SFUMATO_SECRET_KEY), and the node tokens of multi-node jobs
(services.node_tokens, signed on the workers with a key derived from it).

Whoever knows it can forge a session of any user, the admin included. A server or worker therefore refuses to
start with a weak one (short, published, or guessable by server.key_strength's rule); on a shared database
(PostgreSQL) one must be set, and the embedded platform (SQLite, one machine) without one generates a random key
once and keeps it in its state folder, readable by its owner only. `sfumato keygen` prints a good key.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

from server.config import Settings
from server.key_strength import estimated_bits

MIN_KEY_BYTES = 32
MIN_KEY_BITS = 128
KEY_FILE = "secret_key"
# Keys that were ever written in this project's files or that people type as placeholders.
KNOWN_DEFAULTS = frozenset(
    {"change-me", "changeme", "change_me", "secret", "secret-key", "sfumato", "dev", "test", "password"}
)


class WeakSecretKey(RuntimeError):
    """The server must not start: its session key is missing, short, published or guessable."""


def is_embedded(settings: Settings) -> bool:
    return settings.resolved_database_url().startswith("sqlite")


def key_problem(key: str) -> str | None:
    """Why `key` cannot sign sessions on a shared server, or None when it can."""
    if not key:
        return "is not set"
    if key.strip().lower() in KNOWN_DEFAULTS:
        return "is a published placeholder"
    if len(key.encode()) < MIN_KEY_BYTES:
        return f"is shorter than {MIN_KEY_BYTES} bytes"
    bits = estimated_bits(key)
    if bits < MIN_KEY_BITS:
        return (
            f"is guessable: about {bits:.0f} bits of entropy (repeats, runs and common words count as one "
            f"character each), at least {MIN_KEY_BITS} are needed"
        )
    return None


def generate_key() -> str:
    """A key that passes key_problem: 32 random bytes, URL-safe base64 (43 characters, about 256 bits)."""
    key = secrets.token_urlsafe(MIN_KEY_BYTES)
    while key_problem(key) is not None:  # a random key that happens to read as patterns: draw again
        key = secrets.token_urlsafe(MIN_KEY_BYTES)
    return key


def _embedded_key(home: Path) -> str:
    """The state folder's key, created whole on first use with mode 0600 (linked into place, so processes
    starting together all read the one that won) and never rewritten."""
    path = home / KEY_FILE
    if not path.exists():
        home.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=home, prefix=".secret_key.")  # mode 0600
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(generate_key())
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    return path.read_text().strip()


def session_secret_key(settings: Settings) -> str:
    """SFUMATO_SECRET_KEY, checked; on the embedded platform without one, the state folder's own key.

    Raises WeakSecretKey, naming the variable, when the key set is weak, or none is set off the embedded
    platform."""
    if is_embedded(settings) and not settings.secret_key:
        return _embedded_key(settings.home.resolve())
    problem = key_problem(settings.secret_key)
    if problem is not None:
        raise WeakSecretKey(
            f"SFUMATO_SECRET_KEY {problem}: page sessions and node tokens signed with it could be forged. "
            "Set a generated one: SFUMATO_SECRET_KEY=$(sfumato keygen)"
        )
    return settings.secret_key
