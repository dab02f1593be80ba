"""Recipe schema v1: what a benchmark recipe may say, and the rules checked when it is loaded.

A recipe names one hardware pool, one model, one serving engine configuration and one workload.
Methodology knobs (prefix caching, speculative decoding, KV offload, routing) are typed fields here;
each engine adapter in `runners/engines` turns them into that engine's flags. Setting the same thing
through raw engine arguments is rejected, so the methodology rules below can be checked by machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from recipes.agentx import (
    AGENTX_CHAT_TEXT,
    AGENTX_JOIN,
    AGENTX_PHASE_START,
    AGENTX_SYSTEM_IDLE_CAP_S,
    AGENTX_TREE_IDLE_CAP_S,
    AGENTX_WARMUP_REQUESTS_PER_LANE,
    AGENTX_WINDOW_S,
)
from recipes.limits import (
    MAX_CONCURRENCY,
    MAX_INPUT_TOKENS,
    MAX_OUTPUT_TOKENS,
    MAX_PROMPTS_PER_CONCURRENCY,
    MAX_REPLAY_PROCESSES,
    MAX_REQUESTS_PER_POINT,
    MAX_SECONDS,
    MAX_TIME_SCALE,
)
from recipes.secrets import looks_like_a_credential, names_a_secret
from recipes.strict import StrictModel

SCHEMA_VERSION = 1


# --- model -----------------------------------------------------------------------------------------


class GeneratedModelSource(StrictModel):
    kind: Literal["generated"] = Field(description="A tiny model the project builds locally (no download).")
    preset: Literal["tiny-llama"] = Field(
        "tiny-llama", description="Which locally generated model to build; see runners/host/generated_model.py."
    )


class HubModelSource(StrictModel):
    kind: Literal["hub"] = Field(description="A model the engine host fetches from a model hub itself.")
    repo: str = Field(description="Hub repository id, e.g. 'deepseek-ai/DeepSeek-R1-0528'.")
    revision: str | None = Field(None, description="Pinned revision (commit) for reproducibility.")


class PathModelSource(StrictModel):
    kind: Literal["path"] = Field(description="A model directory already present on the engine host.")
    path: str = Field(description="Absolute path of the model directory on the engine host.")


ModelSource = Annotated[GeneratedModelSource | HubModelSource | PathModelSource, Field(discriminator="kind")]


class ModelSpec(StrictModel):
    name: str = Field(description="Served model name, as clients send it in the `model` field.")
    source: ModelSource = Field(description="Where the weights and tokenizer come from.")


# --- methodology knobs -----------------------------------------------------------------------------


class SpeculativeDecoding(StrictModel):
    method: Literal["mtp", "eagle", "eagle3", "ngram", "draft-model"] = Field(
        description="Speculative decoding method."
    )
    num_speculative_tokens: int = Field(ge=1, le=16, description="Tokens proposed per step.")
    draft_model: str | None = Field(None, description="Draft model id, for eagle/draft-model methods.")
    golden_acceptance_length: float | None = Field(
        None,
        gt=1.0,
        description="Acceptance length the run is pinned to, so spec-decode results stay comparable.",
    )


class KvOffload(StrictModel):
    backend: Literal["none", "dram"] = Field("none", description="Second KV-cache tier: none or host DRAM.")
    dram_gib: float | None = Field(None, gt=0, description="Host DRAM given to the KV cache, in GiB.")
    connector: Literal["native", "simple-cpu-offload"] = Field(
        "native",
        description="How the engine attaches the DRAM tier, where it has more than one way: 'native' is the engine's "
        "own (vLLM --kv-offloading-backend native, SGLang HiCache, TensorRT-LLM host_cache_size); "
        "'simple-cpu-offload' is vLLM's SimpleCPUOffloadConnector through --kv-transfer-config, as InferenceX's "
        "agentic vLLM configurations attach it. An adapter refuses a connector it does not have.",
    )

    @model_serializer(mode="wrap")
    def _omit_default_connector(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(self, handler(self), ("connector",))  # fingerprints of older recipes hold

    @model_validator(mode="after")
    def _size_needed(self) -> KvOffload:
        if self.backend == "dram" and self.dram_gib is None:
            raise ValueError("kv_offload.backend 'dram' needs kv_offload.dram_gib (GiB of host DRAM)")
        if self.backend == "none" and self.connector != "native":
            raise ValueError(f"kv_offload.connector: got {self.connector!r} with backend 'none'; a connector attaches "
                             "a DRAM tier, so set backend 'dram' and dram_gib")  # fmt: skip
        return self


class Routing(StrictModel):
    kind: Literal["none", "round-robin", "kv-aware", "session-affinity"] = Field(
        "none",
        description="How requests are spread over several engine workers: 'kv-aware' routes by cached "
        "prefix overlap, 'session-affinity' keeps every request of a session on one worker.",
    )


# Built-in question sets of the accuracy gate (their questions live in runners/loadgen/accuracy.py).
ACCURACY_QUESTION_SETS: tuple[str, ...] = ("basic",)
DUMMY_WEIGHTS_REASON = "dummy weights: answers are random, so accuracy cannot be judged"


class AccuracyQuestion(StrictModel):
    prompt: str = Field(min_length=1, description="The question, sent as one chat message.")
    answers: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="Accepted answers, compared with the reply after normalisation."
    )


class AccuracyQuestionFile(StrictModel):
    """A question file of the accuracy gate (YAML): `questions: [{prompt, answers}, ...]`."""

    questions: list[AccuracyQuestion] = Field(min_length=1, description="The questions, asked in order.")


class AccuracyGate(StrictModel):
    """A quick correctness check sent through the endpoint before the first Point (runners/loadgen/accuracy.py)."""

    enabled: bool = Field(True, description="Run the gate (skipped anyway, with the reason, for dummy weights).")
    prompts: str = Field(
        "basic",
        min_length=1,
        description="A built-in question set ('basic'), or a YAML question file relative to the recipe file.",
    )
    min_accuracy: float = Field(0.8, ge=0, le=1, description="Share of correct answers needed to pass.")
    max_tokens: int = Field(
        16, ge=1, le=32768, description="Output cap per answer (raise it for reasoning models that think first)."
    )
    request_timeout_s: float = Field(120.0, gt=0, description="Deadline of one question.")
    reason: str | None = Field(
        None, min_length=1, description="Why the gate is disabled (required to disable it for real weights)."
    )


def serves_dummy_weights(source: GeneratedModelSource | HubModelSource | PathModelSource, args: list[str]) -> bool:
    """True when the engine serves random weights: a generated model, or `--load-format dummy` in its argv."""
    if source.kind == "generated":
        return True
    for index, argument in enumerate(args):
        flag, _, value = argument.partition("=")
        if flag.replace("_", "-") == "--load-format":
            value = value or (args[index + 1] if index + 1 < len(args) else "")
            if value == "dummy":
                return True
    return False


class Methodology(StrictModel):
    prefix_caching: bool = Field(
        False, description="Automatic prefix caching. Must be false for random-token workloads."
    )
    speculative_decoding: SpeculativeDecoding | None = Field(None, description="Off when absent.")
    kv_offload: KvOffload = Field(default_factory=KvOffload, description="KV-cache offload tier.")
    routing: Routing = Field(default_factory=Routing, description="Multi-worker routing policy.")
    accuracy_gate: AccuracyGate = Field(
        default_factory=AccuracyGate, description="Quick correctness check through the endpoint before measuring."
    )

    @model_serializer(mode="wrap")
    def _omit_default_gate(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Added after recipes were first fingerprinted: left out of the dump while it holds its default, so
        # every existing recipe keeps its fingerprint (loader.fingerprint_of dumps the recipe).
        data = handler(self)
        if self.accuracy_gate == AccuracyGate():
            data.pop("accuracy_gate", None)
        return data


# Raw-argument spellings of the methodology knobs, per knob, across engines. A raw argument that
# matches one of these is rejected: the typed field above is the only way to set it.
METHODOLOGY_FLAGS: dict[str, tuple[str, ...]] = {
    "prefix_caching": (
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        "--disable-radix-cache",
        "--enable-block-reuse",
    ),
    "speculative_decoding": (
        "--speculative-config",
        "--speculative-model",
        "--num-speculative-tokens",
        "--speculative-algorithm",
        "--speculative-draft-model-path",
        "--speculative-num-steps",
    ),
    "kv_offload": (
        "--kv-offloading-size",
        "--kv-offloading-backend",
        "--kv-transfer-config",
        "--enable-hierarchical-cache",
        "--hicache-ratio",
        "--hicache-size",
    ),
    "routing": ("--router-mode", "--load-balance-method"),
}


def methodology_knob_of(argument: str) -> str | None:
    """The methodology knob a raw engine argument would set, or None. Accepts `--a_b` and `--a-b=x`."""
    flag = argument.split("=", 1)[0].replace("_", "-").lower()
    for knob, spellings in METHODOLOGY_FLAGS.items():
        if flag in spellings:
            return knob
    return None


# --- engine and parallelism ------------------------------------------------------------------------


class VenvEnvironment(StrictModel):
    kind: Literal["venv"] = Field(description="An isolated Python environment built by `infersweep engine setup`.")
    name: str = Field(description="Registered environment name, e.g. 'vllm-cpu'.")


class ContainerEnvironment(StrictModel):
    kind: Literal["container"] = Field(description="A container image run by the runner (docker/enroot).")
    image: str = Field(description="Image reference pinned by tag or digest, e.g. 'vllm/vllm-openai:v0.11.0'.")
    runtime: Literal["docker", "podman"] = Field(
        "docker", description="Container runtime on the engine host that runs the image (same argv for both)."
    )
    python: str = Field(
        "python3",
        description="Interpreter inside the image that the engine adapter starts the engine with (path or name).",
    )
    mounts: list[str] = Field(
        default_factory=list,
        description="Extra absolute host paths bind-mounted read-only at the same path (the model directory "
        "always is).",
    )

    @field_validator("mounts")
    @classmethod
    def _absolute_mounts(cls, mounts: list[str]) -> list[str]:
        for mount in mounts:
            if not mount.startswith("/") or ":" in mount:
                raise ValueError(f"got {mount!r}; expected an absolute host path without ':'")
        return mounts

    @model_serializer(mode="wrap")
    def _omit_default_runtime(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Added after container recipes were fingerprinted: dumped only when set, so fingerprints hold.
        return _without_defaults(self, handler(self), ("runtime", "python", "mounts"))


class InProcessEnvironment(StrictModel):
    kind: Literal["project"] = Field(
        description="Runs with the project's own Python (only the simulated engine does this)."
    )


EngineEnvironment = Annotated[
    VenvEnvironment | ContainerEnvironment | InProcessEnvironment, Field(discriminator="kind")
]


class SimulatedEngineSettings(StrictModel):
    """The simulated engine's behaviour: timings, plus faults to inject in tests."""

    ttft_ms: float = Field(20.0, ge=0, description="Simulated time to first token, per request.")
    itl_ms: float = Field(2.0, ge=0, description="Simulated gap between output tokens.")
    prefill_ms_per_1k_tokens: float = Field(
        0.0, ge=0, description="Extra simulated prefill time per 1,000 prompt tokens."
    )
    max_batch: int = Field(
        64, ge=1, description="Requests the simulated engine serves at once; more wait in its queue."
    )
    fault: Literal["none", "never-healthy", "exit-after-requests"] = Field(
        "none", description="Fault to inject: never answer /health, or exit after `fault_after` requests."
    )
    fault_after: int = Field(0, ge=0, description="Requests served before an 'exit-after-requests' fault.")
    fault_once_file: str | None = Field(
        None, description="If set, the fault fires only while this file is absent, and creates it (one-off faults)."
    )
    cache_blocks: int = Field(
        100_000, ge=1, description="KV-cache (HBM tier) capacity in blocks of `block_size` tokens, with prefix caching."
    )
    block_size: int = Field(16, ge=1, description="Tokens per KV-cache block.")

    @model_serializer(mode="wrap")
    def _omit_default_cache(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Added after simulated recipes were fingerprinted: dumped only when set, so fingerprints hold.
        return _without_defaults(self, handler(self), ("cache_blocks", "block_size"))


def _without_defaults(model: BaseModel, data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """`data` (a dump of `model`) without those of `names` whose value is still the field's default."""
    fields = type(model).model_fields
    return {
        key: value
        for key, value in data.items()
        if key not in names or getattr(model, key) != fields[key].get_default(call_default_factory=True)
    }


# Engine fields added after schema v1 recipes existed; dumped only when set (see EngineSpec serializer).
# Typed engine fields an adapter must turn into flags, or refuse (runners/engines/base.py), and the ones a recipe may
# set per load level (`engine.per_concurrency`).
TUNING_FIELDS: tuple[str, ...] = (
    "kv_cache_dtype", "max_num_seqs", "gpu_memory_utilization", "max_num_batched_tokens", "chunked_prefill",
    "attention_backend", "cuda_graph_max_batch_size", "stream_interval",
)  # fmt: skip

# What a disaggregated recipe may set for one role's workers only (`engine.per_role`).
ROLE_FIELDS: tuple[str, ...] = (*TUNING_FIELDS, "env", "extra_args")

_ENGINE_FIELDS_SINCE_V1 = (
    "per_role",
    "per_concurrency",
    "llm_api_options",
    "kv_cache_dtype",
    "max_num_seqs",
    "gpu_memory_utilization",
    "max_num_batched_tokens",
    "dynamo",
    "env_from",
    "chunked_prefill",
    "attention_backend",
    "cuda_graph_max_batch_size",
    "stream_interval",
)


class DynamoSettings(StrictModel):
    """NVIDIA Dynamo: an OpenAI frontend (with its router) in front of engine workers of one backend."""

    backend: Literal["vllm", "sglang", "trtllm", "mocker"] = Field(
        description="Engine the workers run (python -m dynamo.vllm, dynamo.sglang or dynamo.trtllm), or 'mocker': "
        "Dynamo's own stand-in worker, which simulates an engine's timing and KV cache without accelerators "
        "(its results are labelled simulated, never measurements)."
    )
    discovery: Literal["etcd", "file"] = Field(
        "etcd",
        description="How Dynamo's processes find each other: 'etcd' starts etcd and NATS (Dynamo's setup for "
        "several hosts outside Kubernetes); 'file' uses Dynamo's file discovery in the job's directory with its "
        "TCP request plane and ZMQ event plane (no etcd or NATS; one host, or hosts sharing that directory).",
    )

    @model_serializer(mode="wrap")
    def _omit_default_discovery(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(self, handler(self), ("discovery",))  # fingerprints of older recipes hold


def _only(settings: Mapping[str, Any], allowed: tuple[str, ...], where: str, expected: str) -> None:
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: got {', '.join(unknown)}; expected {expected} ({', '.join(allowed)})")


class EngineSpec(StrictModel):
    kind: Literal["vllm", "sglang", "trtllm", "dynamo", "vllm-tpu", "simulated"] = Field(
        description="Serving engine; picks the engine adapter in runners/engines."
    )
    version: str | None = Field(None, description="Engine version, for the result's provenance.")
    environment: EngineEnvironment = Field(description="Where the engine's software comes from.")
    max_model_len: int = Field(gt=0, description="Longest sequence (prompt + output) the engine accepts.")
    port: int | None = Field(
        None, ge=1024, le=65535, description="Fixed server port; a free port is picked when absent."
    )
    startup_timeout_s: float = Field(
        900.0, gt=0, description="Deadline for the engine's /health to answer 200 after launch."
    )
    extra_args: list[str] = Field(
        default_factory=list,
        description="Further engine arguments, as an argv list (never a shell string).",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment variables for the engine, stored with the recipe: never a credential (a "
        "name with TOKEN, KEY, SECRET or PASSWORD, or a token-shaped value, is refused; use env_from).",
    )
    env_from: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list,
        description="Names of environment variables passed to the engine from the runner's own environment "
        "(HF_TOKEN, API keys, a proxy): the value is never written to the recipe, the database, the logs or the "
        "hub. The engine inherits nothing else of that environment but the host's own settings (paths, locale, "
        "devices).",
    )
    simulated: SimulatedEngineSettings | None = Field(
        None, description="Settings of the simulated engine (only for kind 'simulated')."
    )
    kv_cache_dtype: Literal["auto", "fp8"] = Field(
        "auto",
        description="KV-cache element type: 'auto' (the checkpoint's activation dtype) or 'fp8' (half the bytes "
        "per cached token, so about twice the cache capacity; changes hit rates and batch sizes).",
    )
    max_num_seqs: int | None = Field(
        None,
        ge=1,
        description="Most requests the engine runs at once (vLLM --max-num-seqs, SGLang --max-running-requests, "
        "TensorRT-LLM --max_batch_size); the engine's default when absent.",
    )
    gpu_memory_utilization: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Share of accelerator memory the engine may use for weights, activations and KV cache "
        "(vLLM --gpu-memory-utilization, SGLang --mem-fraction-static; TensorRT-LLM's "
        "kv_cache_config.free_gpu_memory_fraction is the share of memory left after the weights); the "
        "engine's default when absent.",
    )
    max_num_batched_tokens: int | None = Field(
        None,
        ge=1,
        description="Token budget of one scheduler step, i.e. the chunked-prefill chunk (vLLM "
        "--max-num-batched-tokens, SGLang --chunked-prefill-size, TensorRT-LLM --max_num_tokens); the "
        "engine's default when absent.",
    )
    chunked_prefill: bool | None = Field(
        None,
        description="Whether a long prompt is prefilled in chunks of max_num_batched_tokens, sharing steps with "
        "decodes (vLLM --enable-chunked-prefill, SGLang --chunked-prefill-size, TensorRT-LLM "
        "enable_chunked_prefill); the engine's default when absent (on in vLLM and SGLang, off in TensorRT-LLM, "
        "which then refuses any prompt longer than its max_num_tokens).",
    )
    attention_backend: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_]+$",
        description="Attention kernel family, in the engine's own name for it (vLLM --attention-backend, e.g. "
        "FLASHINFER; SGLang --attention-backend, e.g. trtllm_mla, flashinfer, aiter; TensorRT-LLM attn_backend, "
        "e.g. TRTLLM); the engine's default when absent.",
    )
    cuda_graph_max_batch_size: int | None = Field(
        None,
        ge=1,
        description="Largest batch the engine captures a CUDA/HIP graph for; bigger decode batches run eagerly "
        "(vLLM --max-cudagraph-capture-size, SGLang --cuda-graph-max-bs, TensorRT-LLM "
        "cuda_graph_config.max_batch_size); the engine's default when absent.",
    )
    stream_interval: int | None = Field(
        None,
        ge=1,
        description="Output tokens the engine gathers before it sends a streamed chunk (vLLM and SGLang "
        "--stream-interval, TensorRT-LLM stream_interval). Above 1 a chunk carries several tokens, so inter-token "
        "gaps are measured per chunk (docs/METRICS.md); the engine's default (1) when absent.",
    )
    dynamo: DynamoSettings | None = Field(
        None, description="Settings of NVIDIA Dynamo (required for kind 'dynamo', and only allowed there)."
    )
    llm_api_options: dict[str, Any] = Field(
        default_factory=dict,
        description="TensorRT-LLM only (trtllm, and Dynamo's trtllm workers): further LLM-API options merged into "
        "the options file the adapter writes (e.g. {moe_config: {backend: CUTLASS}, print_iter_log: true}), as "
        "extra_args are for flags. What a typed field or the methodology sets is refused here, and nothing the "
        "adapter writes is overridden.",
    )
    per_concurrency: dict[int, dict[str, Any]] = Field(
        default_factory=dict,
        description="Tuning that follows the load level, as InferenceX launches one server per concurrency (e.g. "
        "SGLang's --cuda-graph-max-bs $CONC): load level -> typed tuning fields (kv_cache_dtype, max_num_seqs, "
        "gpu_memory_utilization, max_num_batched_tokens, chunked_prefill, attention_backend, "
        "cuda_graph_max_batch_size, stream_interval). Each listed level runs on an engine launched with these "
        "values over the recipe's; the levels not listed share one launch with the recipe's own. One configuration "
        "still: its Points form one curve.",
    )

    per_role: dict[Literal["prefill", "decode"], dict[str, Any]] = Field(
        default_factory=dict,
        description="Settings of one role's workers in a disaggregated recipe, as the public disaggregated recipes "
        "tune prefill and decode apart (e.g. NVIDIA srt-slurm's prefill_environment / decode_environment and "
        "sglang_config.prefill / .decode): role -> typed tuning fields (as in per_concurrency), env and "
        "extra_args. Typed fields replace the engine's for that role; env is merged over engine.env; extra_args "
        "follow engine.extra_args.",
    )

    @model_serializer(mode="wrap")
    def _omit_default_tuning(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Fields added after recipes were first fingerprinted are left out of the dump while they hold their
        # default, so every existing recipe keeps its fingerprint (loader.fingerprint_of dumps the recipe).
        return _without_defaults(self, handler(self), _ENGINE_FIELDS_SINCE_V1)

    @model_validator(mode="after")
    def _per_level_and_role_settings(self) -> EngineSpec:
        # Each level's and each role's engine must be valid on its own (at_concurrency / for_role validate it).
        for level, settings in self.per_concurrency.items():
            if level < 1:
                raise ValueError(f"engine.per_concurrency: got load level {level}; expected a concurrency >= 1")
            _only(settings, TUNING_FIELDS, f"engine.per_concurrency.{level}", "typed tuning fields only")
            self.at_concurrency(level)
        for role, settings in self.per_role.items():
            _only(settings, ROLE_FIELDS, f"engine.per_role.{role}", "typed tuning fields, env or extra_args")
            self.for_role(role)
        return self

    def at_concurrency(self, level: int) -> EngineSpec:
        """The engine one load level is launched with: the recipe's settings with that level's over them, and no
        per-level table (the launch's own recipe says exactly what ran)."""
        settings = self.per_concurrency.get(level)
        if settings is None:
            return self
        return self._with({**settings, "per_concurrency": {}}, f"engine.per_concurrency.{level}")

    def for_role(self, role: str) -> EngineSpec:
        """The engine one role's workers run: the recipe's settings with the role's over them (env merged, extra_args
        appended), and no per-role table. An aggregated worker ('worker') runs the recipe's own."""
        settings = self.per_role.get(role)  # type: ignore[call-overload]  # role is one of the table's literal keys
        if settings is None:
            return self
        merged = {
            **settings,
            "env": {**self.env, **settings.get("env", {})},
            "extra_args": [*self.extra_args, *settings.get("extra_args", [])],
            "per_role": {},
        }
        return self._with(merged, f"engine.per_role.{role}")

    def _with(self, settings: dict[str, Any], where: str) -> EngineSpec:
        """This engine with `settings` over its own fields, validated as an engine of its own (errors name `where`)."""
        try:
            return EngineSpec.model_validate({**self.model_dump(), **settings})
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, item['loc']))}: {item['msg']}" for item in error.errors())
            raise ValueError(f"{where}: {problems}") from None

    @model_validator(mode="after")
    def _dynamo_settings(self) -> EngineSpec:
        if self.kind == "dynamo" and self.dynamo is None:
            raise ValueError("engine.kind 'dynamo' needs engine.dynamo.backend (vllm, sglang or trtllm)")
        if self.kind != "dynamo" and self.dynamo is not None:
            raise ValueError("engine.dynamo is only allowed when engine.kind is 'dynamo'")
        return self

    @field_validator("env")
    @classmethod
    def _no_credentials(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if names_a_secret(name) or looks_like_a_credential(value):
                raise ValueError(
                    f"{name}: a credential must not be written into a recipe (recipes are stored, shown on the hub "
                    f"and published); remove it from engine.env and list its name in engine.env_from: [{name}], "
                    "which passes the value from the runner's own environment"
                )
        return env


class WorkerGroup(StrictModel):
    num_workers: int = Field(1, ge=1, description="Engine workers in this group.")
    tp: int = Field(1, ge=1, description="Tensor parallel size per worker.")
    ep: int = Field(1, ge=1, description="Expert parallel size per worker.")
    pp: int = Field(1, ge=1, description="Pipeline parallel size per worker.")
    dp: int = Field(1, ge=1, description="Data parallel replicas per worker.")
    dp_attention: bool = Field(False, description="Data-parallel attention (DeepSeek-style).")

    @property
    def accelerators(self) -> int:
        return self.num_workers * self.tp * self.pp * self.dp


class Disaggregation(StrictModel):
    prefill: WorkerGroup = Field(description="Prefill worker group.")
    decode: WorkerGroup = Field(description="Decode worker group.")
    kv_transfer: Literal["nixl", "mooncake"] = Field(
        "nixl",
        description="How the KV cache moves from prefill to decode workers: NIXL (every Dynamo backend) or the "
        "Mooncake transfer engine (SGLang only).",
    )

    @model_serializer(mode="wrap")
    def _omit_default_transfer(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(self, handler(self), ("kv_transfer",))  # fingerprints of older recipes hold


class Parallelism(StrictModel):
    tp: int = Field(1, ge=1, description="Tensor parallel size.")
    ep: int = Field(1, ge=1, description="Expert parallel size.")
    pp: int = Field(1, ge=1, description="Pipeline parallel size.")
    dp: int = Field(1, ge=1, description="Data parallel replicas.")
    dp_attention: bool = Field(False, description="Data-parallel attention.")
    disaggregated: Disaggregation | None = Field(
        None, description="Separate prefill and decode worker groups; replaces tp/pp/dp when set."
    )

    @property
    def accelerators(self) -> int:
        """Accelerators the engine uses: the divisor of every per-GPU figure (docs/ARCHITECTURE.md §4)."""
        if self.disaggregated is not None:
            return self.disaggregated.prefill.accelerators + self.disaggregated.decode.accelerators
        return self.tp * self.pp * self.dp


# --- workload --------------------------------------------------------------------------------------


class SequenceLengths(StrictModel):
    isl: int = Field(
        gt=0, le=MAX_INPUT_TOKENS, description="Input sequence length in tokens (upper bound of the random range)."
    )
    osl: int = Field(
        gt=0, le=MAX_OUTPUT_TOKENS, description="Output sequence length in tokens (upper bound of the random range)."
    )


class FixedLengthWorkload(StrictModel):
    kind: Literal["fixed-length"] = Field(description="Random-token prompts of fixed length over a concurrency sweep.")
    sequences: list[SequenceLengths] = Field(min_length=1, description="ISL/OSL pairs to measure.")
    range_ratio: float = Field(
        0.8, ge=0.0, le=1.0, description="Lengths drawn uniformly in [r*L, L] (InferenceX's meaning)."
    )
    concurrency: list[Annotated[int, Field(gt=0, le=MAX_CONCURRENCY)]] = Field(
        min_length=1, description="Max in-flight requests, one Point per value."
    )
    prompts_per_concurrency: int = Field(
        10, ge=1, le=MAX_PROMPTS_PER_CONCURRENCY, description="Measured prompts = this x concurrency."
    )
    warmup_per_concurrency: int = Field(
        2, ge=0, le=MAX_PROMPTS_PER_CONCURRENCY, description="Warmup prompts (not measured) = this x concurrency."
    )
    seed: int = Field(0, description="Seed of the random prompts and lengths.")
    request_timeout_s: float = Field(600.0, gt=0, le=MAX_SECONDS, description="Per-request deadline.")

    @model_validator(mode="after")
    def _requests_per_point_bounded(self) -> FixedLengthWorkload:
        largest = max(self.concurrency) * (self.prompts_per_concurrency + self.warmup_per_concurrency)
        if largest > MAX_REQUESTS_PER_POINT:
            raise ValueError(
                f"concurrency {max(self.concurrency)} x (prompts_per_concurrency + warmup_per_concurrency) = "
                f"{largest:,} requests in one Point; expected at most {MAX_REQUESTS_PER_POINT:,}"
            )
        return self


# When a request that joins subagents still running is sent (ReplaySettings.join).
JoinRule = Literal["when-subagents-end", "after-recorded-gap"]

# When each lane's first measured request is sent once the window opens (ReplaySettings.phase_start).
PhaseStart = Literal["own-think-time", "less-phase-minimum", "at-once"]

# The text a chat replay sends (ReplaySettings.chat_text; runners/loadgen/chat_text.py).
ChatText = Literal["words", "corpus"]

# AgentX's replay settings (recipes/agentx.py): its window, warm-up and idle caps, recorded time and lengths.
AGENTX_REPLAY: dict[str, Any] = {
    "time_scale": 1.0, "length_scale": 1.0, "max_output_tokens": None, "idle_cap_s": AGENTX_SYSTEM_IDLE_CAP_S,
    "think_cap_s": AGENTX_TREE_IDLE_CAP_S, "warmup": True, "warmup_requests_per_lane": AGENTX_WARMUP_REQUESTS_PER_LANE,
    "api": "chat", "join": AGENTX_JOIN, "phase_start": AGENTX_PHASE_START, "chat_text": AGENTX_CHAT_TEXT,
}  # fmt: skip


def agentx_differences(settings: Mapping[str, Any]) -> list[str]:
    """How a replay's settings (a ReplaySettings dump, or a stored recipe's workload, defaults left out) depart from
    AgentX's: each such difference makes its results not comparable with InferenceX's AgentX results."""
    defaults = {name: field.get_default() for name, field in ReplaySettings.model_fields.items()}
    window = float(settings.get("duration_s", AGENTX_WINDOW_S))
    differences = [f"window {window:g} s (AgentX: {AGENTX_WINDOW_S:,.0f} s)"] if window < AGENTX_WINDOW_S else []
    api = settings.get("api", defaults["api"])
    for name, agentx in AGENTX_REPLAY.items():
        value = settings.get(name, defaults[name])
        if name == "chat_text" and api != "chat":
            continue  # no text is sent: `api` is the difference
        if value != agentx:
            differences.append(f"{name} {value} (AgentX: {agentx})")
    return differences


class ReplaySettings(StrictModel):
    """How an agentic replay runs, whoever asks for it: a recipe's workload, each of its Points and
    `infersweep replay` (its flags are made from these fields) hold exactly these settings. A setting is
    added here and nowhere else; one added after recipes were first fingerprinted is also named in
    `settings_since_v1`, so that while it holds its default, fingerprints and Point keys stay as they were."""

    settings_since_v1: ClassVar[tuple[str, ...]] = (
        "warmup_requests_per_lane",
        "api",
        "processes",
        "join",
        "phase_start",
        "chat_text",
    )
    # How the client runs, not what is measured: left out of fingerprints and Point keys (`identity_of`), so an
    # explicit `processes: 2` is the same Point as an automatic 2, and a recipe moved to a machine with more cores
    # resumes. The split the Point ran with is stored with it (ReplayStats.client_processes); whether the client kept
    # up is judged (schedule-lag, client-saturated); that AgentX's whole-system idle cap sees each process's lanes is
    # in docs/METRICS.md.
    not_in_identity: ClassVar[tuple[str, ...]] = ("processes",)

    @classmethod
    def identity_of(cls, dumped: dict[str, Any]) -> dict[str, Any]:
        """`dumped` (these settings as JSON) without the fields that are not part of a Point's identity."""
        return {name: value for name, value in dumped.items() if name not in cls.not_in_identity}

    mode: Literal["sessions", "timeline"] = Field(
        "sessions", description="Closed-loop session trees, or open loop on the trace's timestamps."
    )
    duration_s: float = Field(
        AGENTX_WINDOW_S, gt=0, le=MAX_SECONDS,
        description="Measured window per Point, seconds; AgentX's 3,600 s by default (a shorter one is labelled not "
        "comparable with AgentX results).",
    )  # fmt: skip
    warmup: bool = Field(
        True,
        description="Start lanes at a random 25-75 % turn with their history primed; without it, at their first turn "
        "(agentx-harness: trajectory start ratio 0).",
    )
    warmup_requests_per_lane: int = Field(
        0, ge=0, le=1000,
        description="AgentX's accelerated warm-up (InferenceX runs 10): after a warm-started lane's priming request "
        "(or from its first turn, without `warmup`), this many turns of its session are sent one after another as "
        "one-token requests, unmeasured, before the window opens (at least one turn is left to measure).",
    )  # fmt: skip
    phase_start: PhaseStart = Field(
        "own-think-time",
        description="When a warm-started lane's first measured turn is sent once the window opens: 'own-think-time', "
        "its recorded think time after the window opens; 'less-phase-minimum', that less the smallest such time of "
        "any lane, so the phase's earliest request goes at once and the rest keep their spacing (agentx-harness "
        "1.0.12's default); 'at-once', every lane's at once (its `--burst-phase-starts`). A lane started at its first "
        "turn goes at once in every case.",
    )
    api: Literal["completions", "chat"] = Field(
        "completions",
        description="How prompts are sent: 'completions' sends the synthesised token ids to /v1/completions (prompt "
        "lengths and cache blocks exactly the trace's); 'chat' sends them as text, decoded with the model's "
        "tokenizer, in one user message to /v1/chat/completions, and counts tokens by the server's usage, as AgentX "
        "does (the chat template and re-tokenisation make lengths differ a little from the trace's).",
    )
    chat_text: ChatText = Field(
        "words",
        description="The text of a chat replay's prompts: 'words', each token id one of the tokenizer's shortest word "
        "tokens (the server counts exactly the trace's lengths, but one word a token costs its tokenizer more per "
        "token than natural text); 'corpus', each block a slice of a natural text's tokens (Shakespeare) as long as "
        "the block, as the AgentX harness makes its prompts (its server counts drift a little from the trace's). "
        "Read only with api 'chat'.",
    )
    join: JoinRule = Field(
        "when-subagents-end",
        description="When a request that joins subagents still running is sent: 'when-subagents-end', as soon as the "
        "last of them ends (AIPerf 0.13.0's AgentX); 'after-recorded-gap', at the later of that and its recorded gap "
        "after the request before it ended, a timer the idle caps advance as any other (agentx-harness 1.0.12, its "
        "timing/branch_orchestrator.py: a join releases at the later of its replay deadline and its last child).",
    )
    time_scale: float = Field(
        1.0, gt=0, le=MAX_TIME_SCALE, description="Multiplies recorded think times and timestamps."
    )
    think_cap_s: float = Field(
        AGENTX_TREE_IDLE_CAP_S,
        gt=0,
        le=MAX_SECONDS,
        description="AgentX's per-trajectory-tree idle cap, recorded seconds: when a tree (a root session copy with "
        "its subagents) has had nothing in flight this long, its pending think and spawn timers advance together.",
    )
    idle_cap_s: float = Field(
        AGENTX_SYSTEM_IDLE_CAP_S,
        gt=0,
        le=MAX_SECONDS,
        description="AgentX's whole-system idle cap, recorded seconds: when nothing at all has been in flight this "
        "long, every pending timer advances together (runners/loadgen/idle_caps.py).",
    )
    length_scale: float = Field(1.0, gt=0, le=1, description="Multiplies input, output and block lengths.")
    max_output_tokens: int | None = Field(
        None, gt=0, le=MAX_OUTPUT_TOKENS, description="Cap on recorded output lengths."
    )
    seed: int = Field(0, description="Seed of start points and salts.")
    request_timeout_s: float = Field(600.0, gt=0, le=MAX_SECONDS, description="Per-request deadline, seconds.")
    max_schedule_lag_p99_ms: float = Field(
        5000.0, gt=0, description="Validity: requests may be sent at most this late against their schedule (p99)."
    )
    processes: int | None = Field(
        None, ge=1, le=MAX_REPLAY_PROCESSES,
        description="Client processes the live sessions are split among (sessions mode; each process runs whole "
        "lanes, on one clock, and their records are merged). By default one per 256 live sessions, at most the cores "
        "the client may use (runners/loadgen/replay.py, replay_processes).",
    )  # fmt: skip

    @model_serializer(mode="wrap")
    def _omit_new_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_defaults(self, handler(self), self.settings_since_v1)

    @field_validator("processes")
    @classmethod
    def _processes_only_for_sessions(cls, processes: int | None, info: ValidationInfo) -> int | None:
        if info.data.get("mode") == "timeline" and processes not in (None, 1):
            raise ValueError("an open-loop timeline replays in one process (only session replays are split)")
        return processes

    @field_validator("chat_text")
    @classmethod
    def _text_only_for_chat(cls, chat_text: ChatText, info: ValidationInfo) -> ChatText:
        api = info.data.get("api", "completions")
        if chat_text != "words" and api != "chat":
            raise ValueError(f"{chat_text!r} is the text of chat prompts, and api {api!r} sends none (set api: chat)")
        return chat_text

    def replay_settings(self) -> dict[str, Any]:
        """These settings' values alone (of a workload or a Point), to build another holder of them."""
        return {name: getattr(self, name) for name in ReplaySettings.model_fields}


class AgenticReplayWorkload(ReplaySettings):
    kind: Literal["agentic-replay"] = Field(description="Replay of agentic traces (AgentX-style).")
    trace: str = Field(description="Trace file (Weka JSON or Mooncake JSONL), relative to the recipe file or absolute.")
    concurrency: list[Annotated[int, Field(gt=0, le=MAX_CONCURRENCY)]] = Field(
        min_length=1, description="Live session trees (closed loop), one Point per value."
    )


Workload = Annotated[FixedLengthWorkload | AgenticReplayWorkload, Field(discriminator="kind")]


class ValidityThresholds(StrictModel):
    min_requests_floor: int = Field(10, ge=1, description="Never fewer measured requests than this.")
    min_requests_per_concurrency: float = Field(2.0, ge=0, description="At least this x concurrency measured requests.")
    max_error_rate: float = Field(0.10, ge=0, le=1, description="Largest share of failed requests.")
    max_token_disagreement: float = Field(
        0.10, ge=0, description="Largest relative gap between server and client output-token counts."
    )


class RunnerSpec(StrictModel):
    """How a job reaches its machine and how long it may take. Not part of the recipe's fingerprint:
    the same configuration measured through another runner or deadline is the same configuration."""

    kind: Literal["local", "ssh", "slurm", "tpu-vm", "noop"] = Field(
        description="How the job reaches its machine; picks the runner in runners/ ('noop' runs nothing: "
        "it measures the orchestrator)."
    )
    point_timeout_s: float = Field(
        3600.0,
        gt=0,
        le=MAX_SECONDS,
        description="Deadline for one Point, from its start; a Point past it fails the job (retryable).",
    )
    job_timeout_s: float = Field(
        6 * 3600.0,
        gt=0,
        le=MAX_SECONDS,
        description="Deadline for the whole job from placement; past it the job fails (final).",
    )


class PublicConfiguration(StrictModel):
    """A published configuration a recipe reproduces: where it is, pinned to a commit."""

    project: str = Field(min_length=1, description="Who publishes it, e.g. 'InferenceX'.")
    repository: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", description="Public repository (owner/name) that holds it."
    )
    file: str = Field(min_length=1, description="Path of the file in that repository.")
    key: str = Field(min_length=1, description="The configuration's key in that file (InferenceX's public key).")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$", description="The commit the facts were read at (40 hex digits).")
    differs: str | None = Field(
        None, min_length=1, description="What this recipe does differently from the public configuration, and why."
    )


class RecipeReference(StrictModel):
    """What a recipe's layout and settings come from: a public configuration it reproduces, or its own reason."""

    reproduces: PublicConfiguration | None = Field(None, description="The public configuration reproduced.")
    own: str | None = Field(
        None, min_length=1, description="Why this recipe is its own layout (no public configuration reproduced)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> RecipeReference:
        if (self.reproduces is None) == (self.own is None):
            raise ValueError("give exactly one of reference.reproduces (a public configuration) or reference.own")
        return self

    @property
    def label(self) -> str:
        """'reproduces InferenceX dsr1-fp8-b200-sglang' or 'own layout'."""
        if self.reproduces is not None:
            return f"reproduces {self.reproduces.project} {self.reproduces.key}"
        return "own layout"


class Recipe(StrictModel):
    schema_version: Literal[1] = Field(1, description="Recipe schema version.")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", description="Unique recipe name (lowercase, dashes).")
    description: str = Field("", description="What this recipe measures, for humans.")
    hardware: str = Field(description="Key of the hardware registry (recipes/hardware.yaml).")
    model: ModelSpec = Field(description="The model served.")
    engine: EngineSpec = Field(description="The serving engine and its configuration.")
    precision: Literal["bf16", "fp16", "fp8", "fp4", "int8", "int4", "fp32"] = Field(
        description="Weight precision served."
    )
    parallelism: Parallelism = Field(default_factory=Parallelism, description="How the model is split.")
    methodology: Methodology = Field(default_factory=Methodology, description="Typed methodology knobs.")
    runner: RunnerSpec = Field(description="Runner kind that executes the job.")
    repeats: int = Field(1, ge=1, le=100, description="Independent repeats of every Point, for error bars.")
    workload: Workload = Field(description="What load is driven against the engine.")
    validity: ValidityThresholds = Field(
        default_factory=ValidityThresholds, description="Thresholds of the validity verdict."
    )
    reference: RecipeReference | None = Field(
        None,
        description="The public configuration this recipe reproduces, or why it is its own (required in the "
        "catalogue, recipes/catalogue/); not part of the fingerprint: citing a source changes nothing measured.",
    )
