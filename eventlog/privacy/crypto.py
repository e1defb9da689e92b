"""AES-256-GCM twice: a person's data key seals their values; the master key wraps the data
keys. Every ciphertext is bound to its person (associated data), so neither a sealed value
nor a wrapped key can be moved to someone else's. Pure: no I/O."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from eventlog.errors import Unavailable

PLACEHOLDER: Final = "[erased]"  # what an erased person's value reads as, everywhere
FORMAT: Final = b"\x01"  # first byte of a sealed value: AES-256-GCM, 96-bit synthetic nonce
NONCE: Final = 12
KEY_BYTES: Final = 32


class SealError(Unavailable):
    """A key that does not open what it should: a master key this process was not given (a
    rotation half rolled out), or damaged data. A request meeting one answers 503, not 500:
    another replica, or this one once configured, can answer it."""


class MasterKey:
    """The key that wraps every data key (PII_MASTER_KEY), known by a fingerprint that is
    stored beside each wrapped key (so a wrong or rotated key is told apart from damage)."""

    __slots__ = ("_aead", "_key", "id")

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"a master key is {KEY_BYTES} bytes (256 bits)")
        self._aead = AESGCM(key)
        self._key = key
        self.id = hashlib.sha256(b"flagstore master key\x00" + key).hexdigest()[:16]

    @classmethod
    def parse(cls, text: str) -> MasterKey:
        """32 bytes as base64 (standard or URL-safe, padding optional) or as 64 hex digits."""
        text = text.strip()
        if len(text) != 2 * KEY_BYTES and len(text) % 2 == 0 and _is_hex(text) and len(text) > 44:
            raise ValueError(
                f"{len(text)} hex digits; it must be {2 * KEY_BYTES} (32 bytes: "
                "`openssl rand -hex 32`)"
            )
        key: bytes | None = None
        if len(text) == 2 * KEY_BYTES:
            try:
                key = bytes.fromhex(text)
            except ValueError:
                key = None
        if key is None:
            try:
                padded = text + "=" * (-len(text) % 4)
                key = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(
                    "not base64 or hex; make one with `openssl rand -base64 32`"
                ) from None
        if len(key) != KEY_BYTES:
            raise ValueError(
                f"{len(key)} bytes; it must be {KEY_BYTES} (e.g. `openssl rand -base64 32`)"
            )
        return cls(key)

    @staticmethod
    def generate() -> str:
        """A new master key as base64 text."""
        return base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()

    def text(self) -> str:
        """The key as base64 (for a rebuild worker's environment; never logged)."""
        return base64.b64encode(self._key).decode()

    def __repr__(self) -> str:
        return f"MasterKey(id={self.id})"

    def wrap(self, person: int, data_key: bytes) -> bytes:
        nonce = os.urandom(NONCE)
        return nonce + self._aead.encrypt(nonce, data_key, _wrap_context(person))

    def unwrap(self, person: int, wrapped: bytes) -> DataKey:
        return DataKey(self.unwrap_bytes(person, wrapped))

    def unwrap_bytes(self, person: int, wrapped: bytes) -> bytes:
        try:
            return self._aead.decrypt(wrapped[:NONCE], wrapped[NONCE:], _wrap_context(person))
        except InvalidTag:
            raise SealError(f"the data key of person {person} does not unwrap") from None


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


def _wrap_context(person: int) -> bytes:
    return b"flagstore data key\x00%d" % person


def new_data_key() -> bytes:
    return AESGCM.generate_key(bit_length=256)


class DataKey:
    """One person's key: seals their values, opens what it sealed.

    AES-256-GCM with a synthetic nonce: the first 96 bits of HMAC-SHA256, under a key derived
    from the data key, of the person's id and the value. The same value of the same person
    seals to the same text, so a reader opens each distinct value once (a replay meets a
    person's name in every event they caused); a nonce repeats only with its plaintext, which
    is what GCM needs. What this shows: that two of one person's sealed values are equal, which
    their ids mostly tell anyway; across persons, nothing (each has their own key)."""

    __slots__ = ("_aead", "_nonces")

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)
        self._nonces = hmac.new(key, b"flagstore nonce key", hashlib.sha256).digest()

    def seal(self, person: int, value: str) -> str:
        """The value as base64 of format byte, nonce, ciphertext and tag."""
        data = value.encode()
        context = b"%d" % person
        nonce = hmac.new(self._nonces, context + b"\x00" + data, hashlib.sha256).digest()[:NONCE]
        sealed = self._aead.encrypt(nonce, data, context)
        return binascii.b2a_base64(FORMAT + nonce + sealed, newline=False).decode()

    def open(self, person: int, sealed: str) -> str:
        try:
            raw = binascii.a2b_base64(sealed)
            if raw[:1] != FORMAT:
                raise SealError(f"a sealed value of person {person} has an unknown format")
            plain = self._aead.decrypt(raw[1 : 1 + NONCE], raw[1 + NONCE :], b"%d" % person)
        except (InvalidTag, binascii.Error, ValueError) as exc:
            raise SealError(f"a sealed value of person {person} does not open") from exc
        return plain.decode()
