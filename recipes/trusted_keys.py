"""The keys whose signed result bundles `infersweep verify` trusts: each an owner (a runner or a contributor) and the
ed25519 public key it signs with (recipes/trusted_keys.yaml, reviewed like any recipe change)."""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path

from pydantic import Field, field_validator

from recipes.strict import StrictModel
from recipes.yamlio import load_validated

TRUSTED_KEYS = Path(__file__).with_name("trusted_keys.yaml")


def key_id(public_key: bytes) -> str:
    """A public key's id: the first 16 hex digits of the sha256 of its 32 raw bytes."""
    return hashlib.sha256(public_key).hexdigest()[:16]


class TrustedKey(StrictModel):
    owner: str = Field(min_length=1, description="Who signs with it: a runner (host) or a contributor (a person).")
    public_key: str = Field(description="The ed25519 public key: its 32 raw bytes, base64.")

    @field_validator("public_key")
    @classmethod
    def _raw_ed25519(cls, value: str) -> str:
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error as error:
            raise ValueError(f"not base64 ({error})") from error
        if len(raw) != 32:
            raise ValueError(f"{len(raw)} bytes; an ed25519 public key is 32")
        return value

    @property
    def raw(self) -> bytes:
        return base64.b64decode(self.public_key)

    @property
    def id(self) -> str:
        return key_id(self.raw)


class TrustedKeys(StrictModel):
    keys: list[TrustedKey] = Field(default_factory=list, description="Every key whose bundles verify.")

    def by_id(self) -> dict[str, TrustedKey]:
        return {key.id: key for key in self.keys}


def load_trusted_keys(path: Path = TRUSTED_KEYS) -> TrustedKeys:
    return load_validated(path, TrustedKeys, "trusted keys")
