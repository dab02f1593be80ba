"""Engine adapters: turn a recipe's typed engine fields into a launch (argv, environment, port).

Adapters register under the recipe's `engine.kind`; the runner looks them up by name, so a new
serving stack is one new module, not a branch in the runner.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from recipes.errors import ConfigurationError
from recipes.hardware import load_hardware_registry
from recipes.registry import Registry
from recipes.schema import TUNING_FIELDS, ContainerEnvironment, Recipe
from runners.loadgen.records import Origin

# Placeholders in the argv and environment of a process that spans several hosts (see ProcessSpec):
# the runner that starts it fills them per host with str.format-style replacement.
NODE_RANK = "{node_rank}"  # 0 .. nodes-1: which node of the process this copy runs on
DIST_INIT_ADDR = "{dist_init_addr}"  # host:port of node 0 of the process (its rendezvous)
LEADER_HOST = "{leader_host}"  # host running the plan's entry process (frontend, etcd, NATS)


@dataclass(frozen=True)
class ProcessSpec:
    """One process of a multi-process launch (Dynamo: etcd, NATS, frontend, prefill and decode workers).

    `argv` runs inside the recipe's environment (the container image, when there is one). A process with
    `nodes` > 1 is started once per node, with NODE_RANK / DIST_INIT_ADDR / LEADER_HOST filled in; a
    process on a host other than the entry process's gets LEADER_HOST filled too.
    """

    role: str  # "etcd", "nats", "frontend", "prefill", "decode"
    index: int  # which worker of its role (0 for singletons)
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    accelerators: int = 0  # accelerators this process uses (TP x PP x DP of one worker)
    nodes: int = 1  # hosts the process spans (one copy per host)
    files: dict[str, str] = field(default_factory=dict)  # config files it reads: relative path -> content

    @property
    def name(self) -> str:
        return f"{self.role}-{self.index}"


@dataclass(frozen=True)
class LaunchPlan:
    """How to start one engine server process and how to know it is ready.

    The fields after `extra` are optional additions (older adapters leave them at their defaults):
    - `ready_model`: when set, readiness is `GET health_path` answering 200 with this model id among the
      OpenAI `/v1/models` list (`data[].id`), not a bare 200 (Dynamo's frontend answers before workers join).
    - `processes`: every process of a multi-process launch, in start order; `argv`/`env` above are then
      those of the entry process (the one listening on `port`), which is also one of `processes`.
    - `files`: config files the entry process reads, relative path -> content; argv names them by that
      relative path, so the runner writes them into the engine's working directory before launch.
    - `image`: the container image the argv runs in (the recipe's engine.environment), or None.
    - `ready_workers`: when set, readiness also needs the entry process's `/health` to list this many worker
      instances serving `generate` (Dynamo's frontend lists a model once one worker registered; the prefill
      workers of a disaggregated launch may register later, and requests before that skip them).
    - `session_headers` / `parent_session_headers`: the HTTP headers a replay puts a request's session id (and
      a subagent's parent session id) in, for the engine's router to keep a session on the worker holding its
      prefix (Dynamo's KV router reads X-Dynamo-Session-ID, as InferenceX's newer AgentX recipes send it).
    """

    argv: list[str]
    env: dict[str, str]
    port: int
    served_model: str
    model_dir: Path | None
    health_path: str = "/health"
    metrics_path: str = "/metrics"
    extra: dict[str, str] = field(default_factory=dict)
    ready_model: str | None = None
    processes: list[ProcessSpec] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    ready_workers: int | None = None
    session_headers: tuple[str, ...] = ("X-Session-ID",)
    parent_session_headers: tuple[str, ...] = ()


# Typed engine fields an adapter must turn into flags, or refuse (recipes/schema.py: TUNING_FIELDS). A recipe that
# sets one of them (to a non-default value) for an adapter that does not list it in `honoured_fields` is refused: a
# silently ignored setting would measure another configuration than the recipe says.


@dataclass(frozen=True)
class PromptLimit:
    """The most prompt tokens one request may carry on an engine as a recipe configures it (besides the context
    length every engine has), the recipe field that sets it, and what to change."""

    tokens: int
    field: str
    why: str


def methodology_env(recipe: Recipe, variables: dict[str, str]) -> dict[str, str]:
    """engine.env with the variables an adapter sets for a methodology knob (e.g. pinned speculative acceptance).
    engine.env may not set one of them to another value: the recipe would say one thing and run another."""
    env = dict(recipe.engine.env)
    for name, value in variables.items():
        if env.get(name, value) != value:
            raise ConfigurationError(
                f"engine.env.{name}: got {env[name]!r}; the methodology sets it to {value!r} (a typed methodology "
                "field decides it: change that field, not the variable)"
            )
        env[name] = value
    return env


def unhonoured_fields(recipe: Recipe, honoured: frozenset[str]) -> list[str]:
    """`engine.<field>: got <value>` for every tuning field set in `recipe` but not in `honoured`."""
    engine = recipe.engine
    fields = type(engine).model_fields
    return [
        f"engine.{name}: got {getattr(engine, name)!r}"
        for name in TUNING_FIELDS
        if name not in honoured and getattr(engine, name) != fields[name].get_default()
    ]


class EngineAdapter:
    """Base of engine adapters. Subclasses set `kind` and `origin` and build the launch plan.

    Every subclass's `launch_plan` first refuses typed tuning fields it does not honour (`honoured_fields`),
    so an adapter written before a field existed can never ignore it silently.
    """

    kind: ClassVar[str]
    origin: ClassVar[Origin] = "measured"
    honoured_fields: ClassVar[frozenset[str]] = frozenset()
    # Whether the adapter launches prefill and decode workers apart, each with its role's engine (engine.per_role).
    runs_roles: ClassVar[bool] = False
    # Ways of attaching a DRAM tier (methodology.kv_offload.connector) the adapter maps; others are refused.
    offload_connectors: ClassVar[frozenset[str]] = frozenset({"native"})
    # The table of Prometheus series its /metrics is read by (runners.host.server_metrics.COUNTER_SERIES): vLLM's names
    # are also what vLLM-TPU, Dynamo's vLLM workers and the simulated engine expose.
    counter_series: ClassVar[str] = "vllm"
    # Tokens one scheduler step computes when the recipe sets no `max_num_batched_tokens`: on a CPU host, on
    # accelerators (vLLM's API-server defaults). None: the engine's cache does not pin running requests.
    default_step_tokens: ClassVar[tuple[int, int] | None] = (2048, 8192)

    def takes_llm_api_options(self, recipe: Recipe) -> bool:
        """Whether the engine reads TensorRT-LLM's LLM-API options file (engine.llm_api_options); others refuse it."""
        return False

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "launch_plan" in cls.__dict__:
            cls.launch_plan = _guarded(cls.launch_plan)  # type: ignore[method-assign]  # wraps each adapter's own launch_plan once, at class creation

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        raise NotImplementedError

    def origin_of(self, recipe: Recipe) -> Origin:
        """The origin of this recipe's results: the adapter's, unless the recipe picks a stand-in engine inside it
        (Dynamo's mocker workers)."""
        return self.origin

    def uses_accelerators(self, recipe: Recipe) -> bool:
        """Whether the engine's processes occupy real accelerators (a stand-in engine's do not, so all of them
        fit on one host whatever the recipe's parallelism says)."""
        return self.origin != "simulated"

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        """Flags for the typed methodology knobs; unsupported combinations raise ConfigurationError."""
        raise NotImplementedError

    def launch_limitations(self, recipe: Recipe) -> list[str]:
        """What no runner can launch yet for this engine and recipe, each with its reason (none by default)."""
        return []

    def kv_block_size(self, recipe: Recipe) -> int:
        """Tokens per KV-cache block the engine uses for `recipe` when its /metrics does not say (the theoretical
        hit rate is counted in these blocks); the engine's reported cache shape wins when there is one."""
        return 16

    def prompt_limit(self, recipe: Recipe) -> PromptLimit | None:
        """A limit on one request's prompt beyond `engine.max_model_len` (None: the engine chunks long prompts)."""
        return None

    def step_token_budget(self, recipe: Recipe) -> int | None:
        """The step token budget the planner's scheduler model uses (traces/scheduler_sim.py); None for an
        engine whose cache does not pin running requests, which the planner's LRU models instead."""
        if self.default_step_tokens is None:
            return None
        if recipe.engine.max_num_batched_tokens is not None:
            return recipe.engine.max_num_batched_tokens
        on_cpu, on_accelerators = self.default_step_tokens
        host = load_hardware_registry()[recipe.hardware].accelerator_unit == "host"
        return on_cpu if host else on_accelerators


def _guarded(launch_plan: Callable[..., LaunchPlan]) -> Callable[..., LaunchPlan]:
    @functools.wraps(launch_plan)
    def checked(self: EngineAdapter, recipe: Recipe, *args: object, **kwargs: object) -> LaunchPlan:
        problems = unhonoured_fields(recipe, self.honoured_fields)
        for role in recipe.engine.per_role:
            if not self.runs_roles:
                problems.append(f"engine.per_role: got {role!r}")
                continue
            in_role = recipe.model_copy(update={"engine": recipe.engine.for_role(role)})
            unhonoured = unhonoured_fields(in_role, self.honoured_fields)
            problems += [f"engine.per_role.{role}: {problem}" for problem in unhonoured]
        connector = recipe.methodology.kv_offload.connector
        if connector not in self.offload_connectors:
            problems.append(f"methodology.kv_offload.connector: got {connector!r}")
        if recipe.engine.llm_api_options and not self.takes_llm_api_options(recipe):
            problems.append(f"engine.llm_api_options: got {sorted(recipe.engine.llm_api_options)}")
        if problems:
            raise ConfigurationError(
                f"{'; '.join(problems)}; the {self.kind} adapter does not turn this setting into engine flags yet "
                "(leave it at its default or use an engine that supports it)"
            )
        return launch_plan(self, recipe, *args, **kwargs)

    return checked


def group_hosts(workers: int, size: int, per_host: int) -> int:
    """Hosts `workers` workers of `size` accelerators fill, packed whole: a worker never straddles two hosts
    unless it is wider than one, and then it has hosts of its own (runners/host/placement.py packs the same way)."""
    if size > per_host:
        return workers * -(-size // per_host)
    return -(-workers // (per_host // size))


def fill_placeholders(process: ProcessSpec, values: dict[str, str]) -> ProcessSpec:
    """`process` with the placeholders of `values` (LEADER_HOST, NODE_RANK, ...) replaced in its argv and env."""

    def filled(text: str) -> str:
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        return text

    return replace(
        process,
        argv=[filled(word) for word in process.argv],
        env={name: filled(value) for name, value in process.env.items()},
    )


def container_image(recipe: Recipe) -> str | None:
    """The image the engine runs in, when its environment is a container (recorded in the launch plan)."""
    environment = recipe.engine.environment
    return environment.image if isinstance(environment, ContainerEnvironment) else None


ENGINE_ADAPTERS: Registry[type[EngineAdapter]] = Registry("engine adapter")


def register_engine(adapter: type[EngineAdapter]) -> type[EngineAdapter]:
    return ENGINE_ADAPTERS.register(adapter.kind, adapter)
