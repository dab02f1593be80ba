"""What looks like a credential, so that no recipe, inventory or error message ever carries one.

Recipes are stored (the recipe row's snapshot), shown on the hub and published in snapshots; an engine that
needs a token gets it with `engine.env_from: [NAME]`, passed from the runner's own environment by name.
"""

from __future__ import annotations

import re
from typing import Any

# Name segments (split on `_`, `-`, `.`) that say a variable or key holds a credential wherever they stand...
_SECRET_SEGMENTS = frozenset({"SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY"})
# ...and words that do so only as the name's last segment (HF_TOKEN, VLLM_API_KEY) or before ID (AWS_ACCESS_KEY_ID):
# elsewhere they name a quantity or a cache (SGLang's SGLANG_PER_TOKEN_GROUP_QUANT_8BIT_V2, set by NVIDIA's public
# GB300 recipes, is no credential).
_SECRET_LAST_SEGMENTS = frozenset({"TOKEN", "KEY"})
# Values shaped like the credentials of the services an inference benchmark meets.
_CREDENTIAL_VALUE = re.compile(
    r"^(hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|eyJ[\w-]{10,}\.eyJ[\w-]{10,}\..*"
    r"|Bearer\s+\S{16,})$|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
NOT_SHOWN = "<not shown>"


def names_a_secret(name: str) -> bool:
    """True for HF_TOKEN, VLLM_API_KEY, password, aws-secret-access-key...; False for VLLM_CPU_KVCACHE_SPACE and
    SGLANG_PER_TOKEN_GROUP_QUANT_8BIT_V2."""
    segments = re.split(r"[_.\-]", name.upper())
    if any(segment in _SECRET_SEGMENTS for segment in segments):
        return True
    last = segments[-2] if len(segments) > 1 and segments[-1] == "ID" else segments[-1]
    return last in _SECRET_LAST_SEGMENTS


def looks_like_a_credential(value: str) -> bool:
    return bool(_CREDENTIAL_VALUE.search(value.strip()))


def redacted(value: Any) -> Any:
    """`value` with every credential-looking string and every value under a secret-naming key replaced."""
    if isinstance(value, dict):
        return {key: NOT_SHOWN if names_a_secret(str(key)) else redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redacted(item) for item in value)
    if isinstance(value, str) and looks_like_a_credential(value):
        return NOT_SHOWN
    return value
