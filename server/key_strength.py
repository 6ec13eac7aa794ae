"""How many bits of guessing a secret key is worth, estimated the way an attacker would start: patterns first.

The rule (docs/security.md, "The session key"): the key is read left to right in pieces. A piece is one
character, or, when one starts there, the longest of
- a repeat: 3 or more characters that already occurred earlier in the key (`aaaa…`, `change-me-change-me-`),
- a run: 3 or more characters whose code points step by +1 or -1 throughout (`abcdef`, `9876`),
- a placeholder word from PLACEHOLDER_WORDS, in any case (`change`, `secret`, `password`, …).
Each piece is worth log2 of the key's alphabet: 16 for a key of hex digits only, otherwise the sum of the
classes it uses (10 digits, 26 lower-case, 26 upper-case, 33 others). A random key has no patterns, so its
estimate is its length times the bits of its alphabet (64 hex digits: 256 bits); `'a' * 32` is two pieces.

A key without digits that reads as words (letter groups split by other characters or by capitals) is also
guessed as a passphrase: each word of up to 12 letters is worth WORD_BITS, a word drawn from a 7,776-word list
(Diceware's), and a longer group is read in pieces as above. The estimate is the lower of the two readings.
"""

from __future__ import annotations

import math
import re
import string

MIN_PATTERN = 3
WORD_BITS = math.log2(7776)
MAX_WORD = 12
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# Words people put in keys they type instead of generating: placeholders, defaults, the project's own name.
PLACEHOLDER_WORDS = frozenset(
    {
        "admin", "changeme", "change", "default", "demo", "development", "dev", "django", "dummy", "example",
        "fixme", "flask", "foo", "bar", "baz", "hello", "world", "insecure", "unsafe", "key", "letmein", "local",
        "localhost", "passwd", "password", "please", "prod", "production", "qwerty", "asdf", "random", "replace",
        "sample", "secret", "session", "sfumato", "signing", "string", "super", "temp", "test", "testing", "todo",
        "token", "your", "here", "this", "that", "the", "for", "not", "set", "real", "very", "long", "value",
    }
)  # fmt: skip
_HEX = (frozenset("0123456789abcdef"), frozenset("0123456789ABCDEF"))
_CLASSES = (
    (frozenset(string.digits), 10),
    (frozenset(string.ascii_lowercase), 26),
    (frozenset(string.ascii_uppercase), 26),
)
_OTHERS = 33  # printable ASCII punctuation and space; any other character counts among them


def alphabet_size(key: str) -> int:
    """The number of characters a key of this kind is drawn from, as an attacker would guess it."""
    chars = frozenset(key)
    if any(chars <= hex_digits for hex_digits in _HEX):
        return 16
    size = sum(count for members, count in _CLASSES if chars & members)
    if any(not any(c in members for members, _ in _CLASSES) for c in chars):
        size += _OTHERS
    return size


def _repeat_length(key: str, start: int) -> int:
    """How many characters from `start` repeat what began earlier (overlapping allowed, like `aaaa`)."""
    length = 0
    while start + length < len(key):
        candidate = length + 1
        if key.find(key[start : start + candidate], 0, start + candidate - 1) == -1:
            break
        length = candidate
    return length if length >= MIN_PATTERN else 0


def _run_length(key: str, start: int) -> int:
    """How many characters from `start` step by the same +1 or -1 code point."""
    if start + 1 >= len(key):
        return 0
    step = ord(key[start + 1]) - ord(key[start])
    if step not in (1, -1):
        return 0
    end = start + 1
    while end + 1 < len(key) and ord(key[end + 1]) - ord(key[end]) == step:
        end += 1
    length = end - start + 1
    return length if length >= MIN_PATTERN else 0


def _word_length(lowered: str, start: int) -> int:
    return max((len(word) for word in PLACEHOLDER_WORDS if lowered.startswith(word, start)), default=0)


def pieces(key: str) -> int:
    """The number of pieces the key reads as: characters, with each repeat, run or placeholder word as one."""
    lowered = key.lower()
    count = position = 0
    while position < len(key):
        pattern = max(_repeat_length(key, position), _run_length(key, position), _word_length(lowered, position))
        position += max(1, pattern)
        count += 1
    return count


def _pieces_bits(text: str) -> float:
    return pieces(text) * math.log2(alphabet_size(text))


def _passphrase_bits(key: str) -> float | None:
    """The key read as words, or None when it has digits or fewer than two words."""
    if any(c in string.digits for c in key):
        return None
    words = _WORD.findall(key)
    if len(words) < 2:
        return None
    return sum(WORD_BITS if len(word) <= MAX_WORD else _pieces_bits(word) for word in words)


def estimated_bits(key: str) -> float:
    """The key's estimated entropy in bits (the module's rule); 0 for an empty key."""
    if not key:
        return 0.0
    as_pieces = _pieces_bits(key)
    as_words = _passphrase_bits(key)
    return as_pieces if as_words is None else min(as_pieces, as_words)
