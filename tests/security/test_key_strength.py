"""Issue 33, "Why" 11: weak keys started the server. `'a' * 32` and `change-me-change-me-change-me-xx` were
accepted because only the length was checked.

A key now needs 32 bytes and an estimated 128 bits of entropy (server.key_strength: repeats, runs and common
words count as one character; a key of words counts each as a Diceware word). The server and the worker refuse a
weak key at start, naming SFUMATO_SECRET_KEY and `sfumato keygen` (test_server_process.py; the keys:
tests/cli/test_keygen.py).
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest

from server.config import Settings
from server.key_strength import estimated_bits
from server.secret_key import MIN_KEY_BITS, WeakSecretKey, key_problem, session_secret_key

WEAK_KEYS = {
    "repeated": "a" * 32,
    "placeholder": "change-me-change-me-change-me-xx",
    "two_characters": "ab" * 16,
    "runs": "k" * 16 + "0123456789abcdef",
    "words": "my-super-secret-session-key-for-sfumato-prod",
    "passphrase": "correct horse battery staple xkcd",
    "camel_case_words": "CorrectHorseBatteryStapleXkcdWordsHere",
}
# 32 random bytes in the forms people generate them; seeded, so the same keys on every run.
_SEEDED = random.Random(33)
RANDOM_KEYS = [
    form(_SEEDED.randbytes(32))
    for _ in range(300)
    for form in (bytes.hex, lambda b: base64.b64encode(b).decode(), lambda b: base64.urlsafe_b64encode(b).decode())
]


@pytest.mark.parametrize("key", WEAK_KEYS.values(), ids=WEAK_KEYS.keys())
def test_a_long_but_guessable_key_is_refused_as_guessable(key: str) -> None:
    assert len(key.encode()) >= 32
    assert estimated_bits(key) < MIN_KEY_BITS
    assert (key_problem(key) or "").startswith("is guessable")


def test_random_keys_in_hex_and_base64_pass() -> None:
    refused = [key for key in RANDOM_KEYS if key_problem(key) is not None]
    assert refused == []


@pytest.mark.parametrize("key", WEAK_KEYS.values(), ids=WEAK_KEYS.keys())
def test_the_embedded_platform_refuses_a_weak_key_that_is_set(tmp_path: Path, key: str) -> None:
    """A key set on purpose signs sessions on the embedded platform too; only an unset one is made there."""
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", secret_key=key)
    with pytest.raises(WeakSecretKey, match=r"SFUMATO_SECRET_KEY is guessable.*sfumato keygen"):
        session_secret_key(settings)
