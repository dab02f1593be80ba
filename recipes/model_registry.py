"""Model registry: the models recipes benchmark, with the architecture facts that size their KV cache.

`recipes/models.yaml` holds one entry per model, keyed by a slug ('deepseek-r1', 'gpt-oss-120b', ...):
its upstream hub repository id (or, for a model the project generates itself, its preset), whether it
is dense or a mixture of experts, total and active parameters, context length, the number of layers
and a compact per-layer attention description, plus the KV-cache element type it is usually served
with. The attention description has one of three kinds:

- `full`: every layer is standard (grouped-query) attention with `kv_heads` heads of `head_dim`.
- `mla`: every layer is multi-head latent attention (DeepSeek V3/R1 family), which caches one
  compressed latent of `kv_lora_rank` plus a decoupled RoPE key of `qk_rope_head_dim` per token.
- `mixed`: layers follow `pattern` (e.g. `[sliding, full]`), repeated from layer 0; `sliding`
  layers attend to (and keep) only the last `sliding_window` tokens, `full` layers keep everything,
  `linear` layers (linear attention, e.g. Gated DeltaNet) keep a fixed-size state per sequence and no tokens.

Every number is a fact with the `source` it was taken from and the month it describes (`as_of`,
YYYY-MM), plus an optional `note`, like the figures of `recipes/hardware.yaml`. Units are in the field
names (`*_params_b` in billions, `context_length` in tokens, dimensions in elements).

`kv_bytes_per_token` turns an entry into KV-cache bytes per token, with the formula of
shared/reference/hardware.md ("Model KV-cache size per token"). `python -m recipes.model_registry`
prints the markdown table of docs/MODELS.md.

The file is validated strictly (unknown keys are errors); any problem becomes a `RecipeError` naming
the file, the dotted field path and the value. Only pydantic, PyYAML and the standard library are
imported, like `recipes/hardware.py`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from recipes.keyed_file import KeyedFile
from recipes.strict import StrictModel

SCHEMA_VERSION = 1
DEFAULT_PATH = Path(__file__).with_name("models.yaml")

KvDtype = Literal["fp32", "bf16", "fp16", "fp8"]
# Bytes per cached element for each KV-cache dtype.
KV_DTYPE_BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0}

_KEY_PATTERN = r"^[a-z0-9][a-z0-9.-]*$"
# Hub-style repository ids: 'org/name', letters, digits, '.', '_', '-'.
_HF_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$"
_AS_OF_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])$"


class _Provenance(StrictModel):
    """Where a fact comes from and when it was true (shared by every fact)."""

    source: str = Field(
        ..., min_length=1, description="Where the number comes from (config.json field, model card, document)."
    )
    as_of: str = Field(
        ..., pattern=_AS_OF_PATTERN, description="Month the fact describes (e.g. the model's release), as YYYY-MM."
    )
    note: str | None = Field(
        None, min_length=1, description="Caveat: derived value, rounding, an alternative figure, etc."
    )


class Count(_Provenance):
    """A positive whole number (layers, heads, dimensions, tokens) with its provenance."""

    value: int = Field(..., gt=0, strict=True, description="The number, a positive integer.")


class Amount(_Provenance):
    """A positive real number (parameter counts in billions) with its provenance."""

    value: float = Field(..., gt=0, strict=True, description="The number (ints are accepted), positive and finite.")

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("value must be a finite number")
        return value


class FullAttention(StrictModel):
    """Every layer is standard multi-head / grouped-query attention over the whole context."""

    kind: Literal["full"] = Field(..., description="'full': every layer caches K and V for every token.")
    kv_heads: Count = Field(..., description="Key/value heads per layer (config.json num_key_value_heads).")
    head_dim: Count = Field(..., description="Dimension of one head (config.json head_dim, or hidden / heads).")


class MlaAttention(StrictModel):
    """Every layer is multi-head latent attention (DeepSeek V3/R1 family): one latent per token is cached."""

    kind: Literal["mla"] = Field(..., description="'mla': multi-head latent attention on every layer.")
    kv_lora_rank: Count = Field(..., description="Rank of the compressed KV latent (config.json kv_lora_rank).")
    qk_rope_head_dim: Count = Field(
        ..., description="Dimension of the decoupled RoPE key cached beside the latent (config.json qk_rope_head_dim)."
    )


class MixedAttention(StrictModel):
    """Layers of several kinds, following `pattern`: full attention with sliding-window attention (gpt-oss), or with
    linear attention (Qwen3.5's Gated DeltaNet layers, which keep a fixed-size recurrent state per sequence and no
    per-token KV)."""

    kind: Literal["mixed"] = Field(..., description="'mixed': full, sliding-window and linear layers, per `pattern`.")
    pattern: list[Literal["sliding", "full", "linear"]] = Field(
        ...,
        min_length=1,
        description=(
            "Attention type of consecutive layers, repeated from layer 0 to the last layer: layer i is "
            "pattern[i % len(pattern)] (config.json layer_types, compressed; 'linear' is linear_attention)."
        ),
    )
    sliding_window: Count | None = Field(
        None,
        description="Tokens a sliding layer attends to and keeps in its KV cache (config.json sliding_window); "
        "required when the pattern has sliding layers.",
    )
    kv_heads: Count = Field(
        ..., description="Key/value heads per full or sliding layer (config.json num_key_value_heads)."
    )
    head_dim: Count = Field(..., description="Dimension of one head (config.json head_dim).")

    @model_validator(mode="after")
    def _window_when_sliding(self) -> MixedAttention:
        if ("sliding" in self.pattern) != (self.sliding_window is not None):
            raise ValueError("sliding_window is required with sliding layers in the pattern, and only then")
        return self

    @property
    def has_linear_layers(self) -> bool:
        """Whether some layers are linear attention (engines keep their recurrent state in a pool of its own)."""
        return "linear" in self.pattern


Attention = Annotated[FullAttention | MlaAttention | MixedAttention, Field(discriminator="kind")]


class RegistryModelSpec(StrictModel):
    """One model as written in the registry file (the mapping key is its `key`)."""

    name: str = Field(..., min_length=1, description="Human-readable model name, e.g. 'DeepSeek-R1 (0528)'.")
    hf_id: str | None = Field(
        ...,
        pattern=_HF_ID_PATTERN,
        description=(
            "Upstream hub repository id, e.g. 'deepseek-ai/DeepSeek-R1-0528' (as in a recipe's "
            "model.source.repo); null for a model the project generates itself (then `generated` is set)."
        ),
    )
    generated: Literal["tiny-llama"] | None = Field(
        None,
        description="Preset of runners/host/generated_model.py that generates this model locally "
        "(recipe model.source.preset).",
    )
    architecture: Literal["dense", "moe"] = Field(
        ..., description="'dense' (every parameter is active) or 'moe' (mixture of experts)."
    )
    total_params_b: Amount = Field(..., description="Total parameters, in billions.")
    active_params_b: Amount = Field(
        ..., description="Parameters active per token, in billions (equal to the total for a dense model)."
    )
    context_length: Count = Field(..., description="Longest context the model supports, in tokens.")
    layers: Count = Field(..., description="Transformer layers (config.json num_hidden_layers; no MTP layers).")
    attention: Attention = Field(
        ..., description="Per-layer attention: kind 'full', 'mla' or 'mixed', with the dimensions that size the KV."
    )
    kv_dtype: KvDtype = Field(
        ...,
        description=(
            "KV-cache element type the model is served with by default (the engine's 'auto': the "
            "checkpoint's activation dtype); fp8 halves the cache of bf16."
        ),
    )
    aliases: list[str] = Field(
        default_factory=list,
        description="Other names imported results give it: InferenceX's model prefix ('dsr1'), hub ids of its "
        "revisions and quantised variants (the precision is a field of its own); matched case-insensitively.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> RegistryModelSpec:
        if (self.hf_id is None) == (self.generated is None):
            raise ValueError("set exactly one of hf_id (an upstream model) and generated (a local preset)")
        if self.active_params_b.value > self.total_params_b.value:
            raise ValueError("active_params_b must not exceed total_params_b")
        if self.architecture == "dense" and self.active_params_b.value != self.total_params_b.value:
            raise ValueError("a dense model's active_params_b must equal its total_params_b")
        return self


class RegistryModel(RegistryModelSpec):
    """One model of the registry, with its registry key."""

    key: str = Field(..., pattern=_KEY_PATTERN, description="Registry key (slug), e.g. 'deepseek-r1'.")


_REGISTRY = KeyedFile(
    default_path=DEFAULT_PATH, what="model registry", section="models", spec=RegistryModelSpec,
    entry=RegistryModel, key_field="key", key_pattern=_KEY_PATTERN, key_rule="lowercase letters, digits, '.' and '-'",
)  # fmt: skip


# Load and validate it; the path defaults to `models.yaml` next to this module (read once per process).
load_model_registry = _REGISTRY.load


def kv_bytes_per_token(
    model: RegistryModelSpec, context_tokens: int | None = None, kv_dtype: str | None = None
) -> float:
    """KV-cache bytes per token of `model`, averaged over a context of `context_tokens` tokens.

    The formula (shared/reference/hardware.md, "Model KV-cache size per token"), with
    `b` = bytes per element of the KV dtype (`kv_dtype`, default the model's: 2 for bf16, 1 for fp8):

    - full attention:  2 (K and V) × layers × kv_heads × head_dim × b
    - MLA:             layers × (kv_lora_rank + qk_rope_head_dim) × b
    - mixed:           2 × kv_heads × head_dim × b × (full_layers + sliding_layers × min(1, window / context));
                       linear-attention layers keep a fixed-size state per sequence, not per token, and add nothing

    A sliding-window layer keeps at most `window` tokens, so over a context of C tokens it holds
    min(C, window) entries: per token of that context it costs window / C of a full layer (all of it
    when C ≤ window). With `context_tokens` None the long-context limit is returned (C → ∞): sliding
    layers contribute ~0 and only the full layers count. For gpt-oss-120b (half its layers sliding
    with a 128-token window) this is exactly half the naive full-attention figure, and at 8k tokens
    about half (50.8 %).

    This is the formula's figure, not what a given engine allocates: engines round up to whole KV
    blocks, some allocate sliding layers for the full context, and fp8 caches may store scales too.
    """
    if context_tokens is not None and (
        isinstance(context_tokens, bool) or not isinstance(context_tokens, int) or context_tokens <= 0
    ):
        raise ValueError(f"context_tokens must be a positive integer or None, got {context_tokens!r}")
    dtype = model.kv_dtype if kv_dtype is None else kv_dtype
    if dtype not in KV_DTYPE_BYTES:
        raise ValueError(f"unknown kv_dtype {dtype!r}; expected one of {', '.join(KV_DTYPE_BYTES)}")
    element = KV_DTYPE_BYTES[dtype]
    layers = model.layers.value
    attention = model.attention
    if isinstance(attention, MlaAttention):
        return float(layers * (attention.kv_lora_rank.value + attention.qk_rope_head_dim.value) * element)
    per_layer = 2 * attention.kv_heads.value * attention.head_dim.value * element
    if isinstance(attention, FullAttention):
        return float(layers * per_layer)
    kinds = [attention.pattern[index % len(attention.pattern)] for index in range(layers)]
    full_layers, sliding_layers = kinds.count("full"), kinds.count("sliding")
    window = attention.sliding_window.value if attention.sliding_window is not None else 0
    sliding_share = 0.0 if context_tokens is None else min(1.0, window / context_tokens)
    return float(per_layer * (full_layers + sliding_layers * sliding_share))  # linear layers cache no tokens


# Context lengths and dtypes of the docs/MODELS.md table.
TABLE_CONTEXTS: tuple[tuple[str, int], ...] = (("8k", 8192), ("128k", 131072))
TABLE_DTYPES: tuple[str, ...] = ("bf16", "fp8")


def attention_summary(model: RegistryModelSpec) -> str:
    attention = model.attention
    layers = model.layers.value
    if isinstance(attention, MlaAttention):
        return f"MLA × {layers} (latent {attention.kv_lora_rank.value} + rope {attention.qk_rope_head_dim.value})"
    heads = f"{attention.kv_heads.value} KV heads × {attention.head_dim.value}"
    if isinstance(attention, FullAttention):
        return f"full × {layers} ({heads})"
    pattern = "/".join(attention.pattern)
    window = f"window {attention.sliding_window.value}; " if attention.sliding_window is not None else ""
    return f"{pattern} × {layers} ({window}{heads})"


def markdown_table(registry: dict[str, RegistryModel] | None = None) -> str:
    """The KV bytes/token table of docs/MODELS.md: each model at 8k and 128k context, bf16 and fp8.

    A context longer than the model's `context_length` is shown as '—'.
    """
    models = load_model_registry() if registry is None else registry
    header = ["model", "hub id", "params (total / active)", "context", "attention", "default KV"]
    header += [f"{dtype} @ {label}" for dtype in TABLE_DTYPES for label, _ in TABLE_CONTEXTS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, model in models.items():
        hub = f"`{model.hf_id}`" if model.hf_id else f"generated (`{model.generated}`)"
        params = f"{model.total_params_b.value:,g}B / {model.active_params_b.value:,g}B"
        row = [f"`{key}`", hub, params, f"{model.context_length.value:,}", attention_summary(model), model.kv_dtype]
        for dtype in TABLE_DTYPES:
            for _, tokens in TABLE_CONTEXTS:
                if tokens > model.context_length.value:
                    row.append("—")
                else:
                    row.append(f"{kv_bytes_per_token(model, tokens, dtype):,.0f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    """Print the markdown table of KV-cache bytes per token (docs/MODELS.md)."""
    print(markdown_table())


if __name__ == "__main__":
    main()


def model_key_for(*labels: str | None, registry: dict[str, RegistryModel] | None = None) -> str | None:
    """The registry key the first recognised label means: a key, hub id or alias (case-insensitive), or the last
    part of a local path ('/models/DeepSeek-R1' is deepseek-r1); None when no label is known."""
    models = registry if registry is not None else load_model_registry()
    names: dict[str, str] = {}
    for key, model in models.items():
        names[key] = key
        if model.hf_id:
            names[model.hf_id.lower()] = key
        names.update({alias.lower(): key for alias in model.aliases})
    for label in labels:
        if not label:
            continue
        text = label.strip().lower()
        for candidate in (text, text.rstrip("/").rsplit("/", 1)[-1]):
            if candidate in names:
                return names[candidate]
    return None
