"""Participant access tokens and the bind-address rule of the play server.

Every request to the play server (except ``/healthz``) must carry a valid
participant token, on a loopback address as on any other:

* ``Authorization: Bearer <token>`` (API clients, tests), or
* the ``ua_token`` cookie (HttpOnly, ``SameSite=Strict``) that the entry URL
  ``/?token=<token>`` sets before redirecting to ``/`` (so the token leaves the
  address bar and, with ``Referrer-Policy: no-referrer``, is never sent on).

A missing or unknown token gets ``401``. Tokens are 32 random bytes from
:func:`secrets.token_urlsafe` (256 bits); the server keeps only their SHA-256
digests and compares digests with :func:`hmac.compare_digest`. A token is
never written to the run store, ``run.json``, the traces or an export. A token
read from a ``--tokens`` file must carry an estimated 128 bits at least (:func:`token_bits`: a password of
lower-case letters and digits counts 36 symbols, runs like ``1234`` next to nothing), keep 96 bits once the words,
keyboard walks and repeats that zxcvbn finds are priced as such (:func:`pattern_bits`), and show no trivial
pattern (:func:`token_problem`); a token file that its group or others may read or write is read with a warning
on stderr (anyone who can read it can act as a participant, anyone who can write it can add one). The
only file that holds tokens is the one the experimenter names with
``--tokens FILE`` (created with mode ``0600``, one ``participant<TAB>token``
line each), so a study can restart without handing out new links.

Bind rule (:func:`check_bind`): the server binds ``127.0.0.1`` by default. A
non-loopback address (anything but ``127.0.0.0/8``, ``::1`` and
``localhost``, e.g. ``0.0.0.0`` or a LAN address) is refused unless
``--public`` is given, and then token auth is what guards it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import os
import re
import secrets
import sys
from pathlib import Path
from typing import Callable, Iterable

from urbanarena.errors import UrbanArenaError

#: cookie that carries the participant token in the browser
COOKIE = "ua_token"
#: participant ids: a letter or digit, then up to 63 of ``[A-Za-z0-9_.-]``
PARTICIPANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: random bytes per token
TOKEN_BYTES = 32


class AuthError(UrbanArenaError):
    """Bad participant ids, an unreadable token file, or a refused bind address."""


#: characters a token may hold (those of :func:`secrets.token_urlsafe`: it travels in a URL)
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]+")
#: the least strength of a token, bits (:func:`token_problem`)
MIN_TOKEN_BITS = 128
#: the least strength of a token once zxcvbn's patterns are priced as such, bits (:func:`pattern_bits`): a random
#: 128-bit token keeps more than 110 of them (4,000 seeded ``token_urlsafe(16)`` and ``token_hex(16)``), a password
#: built of words, keyboard walks or a repeated block far fewer
MIN_PATTERN_BITS = 96
#: the longest token read from a file, characters (zxcvbn's time grows with the length)
MAX_TOKEN_CHARS = 128
#: zxcvbn patterns priced by their guesses in :func:`pattern_bits`, and the least length of one that counts
PATTERN_KINDS = ("dictionary", "spatial", "repeat")
PATTERN_MIN_CHARS = 5


def token_alphabet(token: str) -> int:
    """Size of the alphabet a token is read as drawn from: digits only 10; one-case hexadecimal 16; with both
    upper- and lower-case letters URL-safe base64's 64; else the union of the classes it uses (lower case 26,
    upper case 26, digits 10, ``_``/``-`` 2), so that a password of lower-case letters and digits counts 36
    symbols, not 64. (A random 22-character ``secrets.token_urlsafe(16)`` lacks a case with a chance of 2e-5.)"""
    if token.isdigit():
        return 10
    if re.fullmatch(r"[0-9a-f]+|[0-9A-F]+", token):
        return 16
    lower, upper = any("a" <= c <= "z" for c in token), any("A" <= c <= "Z" for c in token)
    if lower and upper:
        return 64
    return 26 * lower + 26 * upper + 10 * any(c.isdigit() for c in token) + 2 * any(c in "_-" for c in token)


#: in a token read as letters (not digits or hexadecimal), a run of this many characters or more that each repeat
#: their predecessor or step by one (``1234567``, ``aaaaaaa``) counts 1 bit a character after its first
#: (:func:`token_bits`); a random base64 token holds one with a chance below 1e-6
RUN_CHARS = 7


def token_bits(token: str) -> float:
    """Estimated strength of a token of :data:`TOKEN_RE` characters, bits (ours; an estimate, not a
    measurement): ``log2(token_alphabet(token))`` a character, less for the characters of long runs
    (:data:`RUN_CHARS`). ``secrets.token_urlsafe(32)`` (43 characters, what ``play`` generates) gives 258 bits,
    ``token_urlsafe(16)`` 132, 32 hexadecimal digits 128; ``password1234567890123456`` 66 (36 symbols, and
    ``123456789`` and ``0123456`` are runs)."""
    if not token:
        return 0.0
    size = token_alphabet(token)
    per = math.log2(max(size, 2))
    if size <= 16:  # digits, hexadecimal: runs are common in random ones; token_problem checks their patterns
        return len(token) * per
    runs = [1]  # lengths of the maximal runs of repeated or one-step characters, in order
    for a, b in zip(token, token[1:]):
        if abs(ord(a) - ord(b)) <= 1:
            runs[-1] += 1
        else:
            runs.append(1)
    return sum(per + (n - 1) * (1.0 if n >= RUN_CHARS else per) for n in runs)


def pattern_bits(token: str) -> float:
    """Strength of a token of :data:`TOKEN_RE` characters (at most :data:`MAX_TOKEN_CHARS`) once the patterns a
    guesser tries first are priced as such, bits: zxcvbn (MIT) splits the token into its most guessable matches;
    a dictionary word (also reversed or l33t), a keyboard walk or a repeated block (:data:`PATTERN_KINDS`) of
    :data:`PATTERN_MIN_CHARS` characters or more counts ``log2`` of zxcvbn's guesses for it (at most what its
    characters would carry at random), every other character ``log2(token_alphabet(token))`` as in
    :func:`token_bits`. Shorter matches and dates or digit sequences count as random: a random token holds them by
    chance. ``PasswordPasswordPassword1`` gives 12 bits (:func:`token_bits`: 150), the 44-character
    ``correcthorsebatterystaplecorrecthorsebattery`` 74, ``secrets.token_urlsafe(32)`` about 255.

    Raises:
        AuthError: zxcvbn is not installed (it comes with the ``web`` extra).
        ValueError: a token longer than :data:`MAX_TOKEN_CHARS`.
    """
    try:
        from zxcvbn import zxcvbn
    except ImportError as e:  # pragma: no cover - the web extra installs it
        raise AuthError("checking a --tokens file needs zxcvbn: pip install 'urbanarena[web]'") from e
    per = math.log2(max(token_alphabet(token), 2))
    total = 0.0
    for m in zxcvbn(token, max_length=MAX_TOKEN_CHARS)["sequence"]:
        random_bits = len(m["token"]) * per
        if m["pattern"] in PATTERN_KINDS and len(m["token"]) >= PATTERN_MIN_CHARS:
            total += min(random_bits, math.log2(max(float(m["guesses"]), 1.0)))
        else:
            total += random_bits
    return total


def token_problem(token: object) -> str | None:
    """Why ``token`` may not guard a participant, or ``None`` when it may (ours; no standard states a rule).

    Refused: anything but a string of :data:`TOKEN_RE` characters, at most :data:`MAX_TOKEN_CHARS`; fewer than
    :data:`MIN_TOKEN_BITS` bits (:func:`token_bits`) or :data:`MIN_PATTERN_BITS` once words, keyboard walks and
    repeats are priced (:func:`pattern_bits`); and trivial patterns, which a random token of that length shows with a chance
    below 1e-6: fewer than 6 distinct characters, a repeated block (``abcabc...``: the token equals itself
    shifted by at most half its length), or at least two thirds of adjacent steps repeating a character or
    moving to the next/previous one (``aaaa``, ``abcd``, ``9876``).
    """
    if not isinstance(token, str) or not TOKEN_RE.fullmatch(token):
        return "must consist of the characters A-Z a-z 0-9 _ - (as secrets.token_urlsafe makes)"
    if len(token) > MAX_TOKEN_CHARS:
        return f"is {len(token)} characters long, {MAX_TOKEN_CHARS} at most (secrets.token_urlsafe(32) makes 43)"
    bits = token_bits(token)
    if bits < MIN_TOKEN_BITS:
        return (f"is too weak: {len(token)} characters carry {bits:.0f} bits (estimated), {MIN_TOKEN_BITS} at "
                "least (e.g. secrets.token_urlsafe(32), or 34 random hexadecimal digits); delete the line to have a "
                "token generated")
    n = len(token)
    if len(set(token)) < 6 or any(token[p:] == token[:-p] for p in range(1, n // 2 + 1)):
        return "is trivially patterned (few distinct characters or a repeated block): use secrets.token_urlsafe(32)"
    steps = sum(abs(ord(a) - ord(b)) <= 1 for a, b in zip(token, token[1:]))
    if 3 * steps >= 2 * (n - 1):
        return "is trivially patterned (runs of repeated or consecutive characters): use secrets.token_urlsafe(32)"
    guessable = pattern_bits(token)
    if guessable < MIN_PATTERN_BITS:
        return (f"is guessable: its words, keyboard walks or repeats leave {guessable:.0f} bits (estimated), "
                f"{MIN_PATTERN_BITS} at least: use secrets.token_urlsafe(32), or delete the line to have a token "
                "generated")
    return None


def check_participant_id(pid: str) -> str:
    """``pid`` when it matches :data:`PARTICIPANT_RE`.

    Raises:
        AuthError: naming the bad id.
    """
    if not isinstance(pid, str) or not PARTICIPANT_RE.fullmatch(pid):
        raise AuthError(f"participant id {pid!r} must be 1-64 characters of A-Z a-z 0-9 _ . - "
                        "starting with a letter or digit")
    return pid


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address: ``127.0.0.0/8``, ``::1`` or the name ``localhost``.
    Any other name or address (``0.0.0.0``, ``::``, a LAN address, a host name) is not."""
    h = host.strip().strip("[]")
    if h.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def check_bind(host: str, public: bool) -> None:
    """Refuse a non-loopback ``host`` unless ``public`` (module docstring).

    Raises:
        AuthError: a non-loopback host without ``public``.
    """
    if not is_loopback(host) and not public:
        raise AuthError(f"refusing to bind {host!r}: it is not a loopback address; give --public to serve other "
                        "machines (every request then needs a participant token)")


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class ParticipantTokens:
    """Participant id <-> token digest (module docstring).

    Build with :meth:`issue` (fresh tokens) or :meth:`load_or_issue` (a ``--tokens`` file).
    """

    def __init__(self) -> None:
        self._by_digest: dict[bytes, str] = {}
        self._participants: list[str] = []

    @property
    def participants(self) -> list[str]:
        """Participant ids in the order they were added (the study's participant index)."""
        return list(self._participants)

    def add(self, participant: str, token: str, *, generated: bool = False) -> None:
        """Register ``token`` for ``participant``; ``generated``: a token this module made with :mod:`secrets`
        (its strength is not estimated again).

        Raises:
            AuthError: a bad id, a duplicate participant, or a weak token (:func:`token_problem`).
        """
        check_participant_id(participant)
        if participant in self._participants:
            raise AuthError(f"participant {participant!r} is listed twice")
        problem = None if generated else token_problem(token)
        if problem is not None:
            raise AuthError(f"the token of participant {participant!r} {problem}")
        self._by_digest[_digest(token)] = participant
        self._participants.append(participant)

    @classmethod
    def issue(cls, participants: Iterable[str]) -> tuple["ParticipantTokens", dict[str, str]]:
        """Fresh tokens for ``participants``: ``(registry, {participant: token})``.

        Raises:
            AuthError: a bad or duplicate id, or no participant.
        """
        reg = cls()
        tokens: dict[str, str] = {}
        for p in participants:
            tok = secrets.token_urlsafe(TOKEN_BYTES)
            reg.add(p, tok, generated=True)
            tokens[p] = tok
        if not tokens:
            raise AuthError("no participant given")
        return reg, tokens

    @classmethod
    def load_or_issue(cls, path: str | Path, participants: Iterable[str],
                      warn: Callable[[str], None] | None = None) -> tuple["ParticipantTokens", dict[str, str]]:
        """Tokens from ``path`` (``participant<TAB>token`` per line; ``#`` comments), adding fresh tokens for
        ``participants`` not yet in it and rewriting it (mode ``0600``). Returns ``(registry, {participant: token})``
        of every participant in the file. ``warn`` gets the warning about a group/world-readable file (default:
        a line on stderr).

        Raises:
            AuthError: a malformed line (file and line named), a bad id, or an empty result.
        """
        p = Path(path)
        tokens: dict[str, str] = {}
        if p.exists():
            mode = _group_or_world_readable(p)
            if mode is not None:
                if mode & 0o044:
                    risk = "is readable by its group or others", "anyone who can read it can act as a participant"
                else:
                    risk = "is writable by its group or others", "anyone who can write it can add a participant"
                (warn or _warn_stderr)(f"warning: token file {p} {risk[0]} (mode {mode:04o}): {risk[1]}; "
                                       f"chmod 600 {p}")
            try:
                text = p.read_text(encoding="utf-8")
            except OSError as e:
                raise AuthError(f"{p}: cannot read the token file ({e})") from e
            for i, line in enumerate(text.splitlines(), 1):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                pid, sep, tok = line.strip().partition("\t")
                if not sep or not tok.strip():
                    raise AuthError(f"{p} [line {i}]: expected 'participant<TAB>token'")
                if pid in tokens:
                    raise AuthError(f"{p} [line {i}]: participant {pid!r} is listed twice")
                tokens[pid] = tok.strip()
        fresh: set[str] = set()
        for pid in participants:
            if pid not in tokens:
                tokens[pid] = secrets.token_urlsafe(TOKEN_BYTES)
                fresh.add(pid)
        changed = bool(fresh)
        reg = cls()
        for pid, tok in tokens.items():
            try:
                reg.add(pid, tok, generated=pid in fresh)
            except AuthError as e:
                raise AuthError(f"{p}: {e}") from None
        if not tokens:
            raise AuthError(f"{p}: no participant (give --participant ID)")
        if changed or not p.exists():
            write_token_file(p, tokens)
        return reg, tokens

    def participant_for(self, token: str | None) -> str | None:
        """The participant whose token is ``token``, else ``None`` (digests compared in constant time)."""
        if not token:
            return None
        d = _digest(token)
        found = None
        for known, pid in self._by_digest.items():
            if hmac.compare_digest(known, d):
                found = pid
        return found


def _group_or_world_readable(p: Path) -> int | None:
    """The permission bits of ``p`` when its group or others may read or write it, else ``None``."""
    try:
        mode = p.stat().st_mode & 0o777
    except OSError:
        return None
    return mode if mode & 0o066 else None


def _warn_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def write_token_file(path: str | Path, tokens: dict[str, str]) -> Path:
    """Write ``{participant: token}`` as ``participant<TAB>token`` lines, readable by the owner only (``0600``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("# urbanarena play participant tokens: keep private\n")
        for pid, tok in tokens.items():
            f.write(f"{pid}\t{tok}\n")
    os.chmod(p, 0o600)
    return p


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value, else ``None``."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


__all__ = ["AuthError", "COOKIE", "PARTICIPANT_RE", "ParticipantTokens", "bearer_token", "check_bind",
           "check_participant_id", "is_loopback", "write_token_file"]
