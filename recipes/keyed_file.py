"""The one loader of the registries' shape: a versioned YAML file holding one mapping of entries by key.

`hardware.yaml` (`accelerators:`), `models.yaml` (`models:`), `prices.yaml` (`models:`) and `slo_tiers.yaml`
(`tiers:`) are each

    schema_version: 1
    <section>:
      <key>: {<entry fields>}

Each registry module declares its entry model and key rule once (`KeyedFile(...)`); this module reads the
file strictly (recipes/yamlio.py: every problem names the file and field), checks every key against the
rule, and returns the entries by key with the key filled into each entry. The file next to the module is
read once per process (the hub and the CLI ask for it often).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import Field, create_model, field_validator

from recipes.strict import StrictModel
from recipes.yamlio import load_validated

EntryT = TypeVar("EntryT", bound=StrictModel)


class KeyedFile(Generic[EntryT]):
    """One registry file's shape: where it is, what its section is called and what an entry holds."""

    def __init__(
        self,
        *,
        default_path: Path,
        what: str,
        section: str,
        spec: type[StrictModel],
        entry: type[EntryT],
        key_field: str,
        key_pattern: str,
        key_rule: str,
    ) -> None:
        """`spec` validates an entry as written in the file; `entry` is `spec` plus `key_field`, the key.
        `key_rule` says in words what `key_pattern` allows (it is quoted in the error)."""
        self.default_path = default_path
        self.what = what
        self.entry = entry
        self.key_field = key_field
        self.section = section

        def keys_follow_the_rule(cls: type, value: dict[str, Any]) -> dict[str, Any]:
            bad = [key for key in value if not re.fullmatch(key_pattern, key)]
            if bad:
                raise ValueError(f"keys must be {key_rule}: {bad}")
            return value

        # The file's fields, named at run time (the section's name), so built as a mapping for create_model.
        fields: dict[str, Any] = {
            "schema_version": (Literal[1], Field(..., description="Version of this file's schema; only 1 exists.")),
            section: (dict[str, spec], Field(..., min_length=1, description=f"Entries by key ({key_rule}).")),  # type: ignore[valid-type]  # a type built at run time
        }
        validators: dict[str, Any] = {"_keys": field_validator(section)(classmethod(keys_follow_the_rule))}
        self.file_model = create_model(
            f"{section.title()}File",
            __base__=StrictModel,
            __doc__=f"The whole of `{default_path.name}`.",
            __validators__=validators,
            **fields,
        )
        self._default = functools.lru_cache(maxsize=1)(lambda: self._read(self.default_path))

    def load(self, path: Path | None = None) -> dict[str, EntryT]:
        """The entries by key; `path` defaults to the file next to the registry module (read once)."""
        if path is None:
            return dict(self._default())
        return self._read(Path(path))

    def _read(self, path: Path) -> dict[str, EntryT]:
        document = load_validated(path, self.file_model, self.what)
        entries: dict[str, StrictModel] = getattr(document, self.section)
        return {key: self.entry.model_validate({self.key_field: key, **dict(spec)}) for key, spec in entries.items()}
