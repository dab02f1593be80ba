"""NVIDIA Dynamo adapter: an OpenAI frontend with its router in front of engine workers (Dynamo 1.x).

One launch is several processes (`LaunchPlan.processes`, in start order):

- `etcd` and `nats` (`nats-server -js`): Dynamo's discovery and event plane, on the first host. Dynamo's
  docs require both for Slurm and other non-Kubernetes multi-host deployments and for KV-aware routing.
- `frontend`: `python3 -m dynamo.frontend --http-port <port> [--router-mode kv|round-robin]`, the entry
  process the load generator talks to. It is ready when the served model is listed on `/v1/models`
  (workers register after the frontend answers), hence `health_path="/v1/models"` and `ready_model`.
- with `engine.dynamo.discovery: file`, no etcd or NATS: every process gets `--discovery-backend file
  --request-plane tcp --event-plane zmq` and `DYN_FILE_KV` names a store in the job's directory.
- workers: `python3 -m dynamo.<backend>` (`engine.dynamo.backend`: vllm, sglang, trtllm, or `mocker`: Dynamo's
  stand-in worker with simulated timing, whose results are labelled simulated), one process
  per worker of `parallelism.disaggregated.prefill` and `.decode` (with `--disaggregation-mode`), or for
  an aggregated recipe `parallelism.dp` workers of tp x pp (one worker with attention DP inside when
  `dp_attention` is set).

Disaggregated workers move the KV cache over `parallelism.disaggregated.kv_transfer`: NIXL (vLLM's
NixlConnector, SGLang's `--disaggregation-transfer-backend nixl`, TensorRT-LLM's
`cache_transceiver_config.backend: NIXL`) or Mooncake (SGLang only). With `methodology.routing.kind:
kv-aware` every worker publishes KV events (vLLM/SGLang `--kv-events-config` on a ZMQ port of its own,
TensorRT-LLM `--publish-events-and-metrics`) so the router can score cached-prefix overlap.

A worker larger than one host (SGLang only: `--nnodes/--node-rank/--dist-init-addr`) is one ProcessSpec
with `nodes` > 1, started once per host with the placeholders of runners/engines/base.py filled in. Host
addresses of other hosts are placeholders too (`{leader_host}`); the slurm runner owns the allocation.
"""

from __future__ import annotations

import json
from pathlib import Path

from recipes.errors import ConfigurationError
from recipes.hardware import load_hardware_registry
from recipes.schema import ContainerEnvironment, Parallelism, Recipe, WorkerGroup
from runners.engines import sglang, trtllm
from runners.engines.base import (
    DIST_INIT_ADDR,
    LEADER_HOST,
    NODE_RANK,
    TUNING_FIELDS,
    EngineAdapter,
    LaunchPlan,
    ProcessSpec,
    PromptLimit,
    container_image,
    methodology_env,
    register_engine,
)
from runners.engines.vllm import vllm_engine_args, vllm_prefix_args, vllm_speculative_args
from runners.loadgen.records import Origin

ETCD_PORT = 2379
# Dynamo's file discovery store (`--discovery-backend file`), relative to the processes' working directory.
FILE_STORE_VARIABLE = "DYN_FILE_KV"
FILE_STORE = "dynamo-discovery"
NATS_PORT = 4222
KV_EVENT_PORT_BASE = 20080  # worker n publishes KV events on this + n (unique even when workers share a host)
ROUTER_MODES = {"kv-aware": "kv", "round-robin": "round-robin"}
_VLLM_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
NIXL_CONNECTOR = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, sort_keys=True)


def _worker_groups(parallel: Parallelism) -> list[tuple[str, WorkerGroup, str]]:
    """(role, worker group, field path) of every worker group; an aggregated recipe is one 'worker' group."""
    if parallel.disaggregated is not None:
        return [
            ("prefill", parallel.disaggregated.prefill, "parallelism.disaggregated.prefill"),
            ("decode", parallel.disaggregated.decode, "parallelism.disaggregated.decode"),
        ]
    if parallel.dp_attention:  # one worker, attention data-parallel inside it
        group = WorkerGroup(num_workers=1, tp=parallel.tp, ep=parallel.ep, pp=parallel.pp, dp=parallel.dp,
                            dp_attention=True)  # fmt: skip
    else:  # dp replicas, each its own worker behind the router
        group = WorkerGroup(num_workers=parallel.dp, tp=parallel.tp, ep=parallel.ep, pp=parallel.pp)
    return [("worker", group, "parallelism")]


def _nodes_per_worker(group: WorkerGroup, per_node: int, where: str) -> int:
    size = group.tp * group.pp * group.dp
    if size <= per_node:
        return 1
    if size % per_node:
        raise ConfigurationError(
            f"{where}: one worker uses tp x pp x dp = {size} accelerators, which is not a whole number of hosts of "
            f"{per_node}; a worker larger than a host must fill its hosts"
        )
    return size // per_node


def _events_config(backend: str, port: int) -> list[str]:
    config: dict[str, object] = {"endpoint": f"tcp://*:{port}", "publisher": "zmq", "topic": "kv-events"}
    if backend == "vllm":
        config["enable_kv_cache_events"] = True
    return ["--kv-events-config", json.dumps(config, sort_keys=True)]


@register_engine
class DynamoAdapter(EngineAdapter):
    kind = "dynamo"

    def takes_llm_api_options(self, recipe: Recipe) -> bool:
        """Its TensorRT-LLM workers read the options file (--extra-engine-args) the trtllm adapter's builders write."""
        return recipe.engine.dynamo is not None and recipe.engine.dynamo.backend == "trtllm"

    def launch_limitations(self, recipe: Recipe) -> list[str]:
        environment = recipe.engine.environment
        if not isinstance(environment, ContainerEnvironment):
            return []
        return [
            f"engine.environment.image: got {environment.image!r}; Dynamo's processes start as one process group "
            "from a venv or the host (engine.environment kind 'venv' or 'project'), and starting them in containers "
            "is not built yet"
        ]

    origin = "measured"
    honoured_fields = frozenset(TUNING_FIELDS)
    runs_roles = True

    def origin_of(self, recipe: Recipe) -> Origin:
        settings = recipe.engine.dynamo
        return "simulated" if settings is not None and settings.backend == "mocker" else self.origin

    def uses_accelerators(self, recipe: Recipe) -> bool:
        """Real workers do. Mocker workers stand in for the workers of the recipe's hardware: on accelerator
        hardware they are placed as those would be (a rehearsal of a multi-node layout); on a CPU host they all
        share it."""
        hardware = load_hardware_registry().get(recipe.hardware)
        return self.origin_of(recipe) != "simulated" or (hardware is not None and hardware.accelerator_unit != "host")

    def prompt_limit(self, recipe: Recipe) -> PromptLimit | None:
        """The workers' backend's limit: TensorRT-LLM workers take the same options as trtllm-serve."""
        dynamo = recipe.engine.dynamo
        return trtllm.prompt_limit(recipe) if dynamo is not None and dynamo.backend == "trtllm" else None

    def methodology_flags(self, recipe: Recipe) -> list[str]:
        """The frontend's router flags (the workers' methodology flags depend on their backend and role)."""
        routing = recipe.methodology.routing.kind
        if routing in ROUTER_MODES:
            if routing == "kv-aware" and not recipe.methodology.prefix_caching:
                raise ConfigurationError(
                    "methodology.routing.kind: got 'kv-aware' with methodology.prefix_caching false; the KV router "
                    "scores the cached blocks workers report, and without prefix caching there are none (use "
                    "'round-robin')"
                )
            return ["--router-mode", ROUTER_MODES[routing]]
        if routing == "none":
            workers = [group.num_workers for _, group, _ in _worker_groups(recipe.parallelism)]
            if max(workers) > 1:
                raise ConfigurationError(
                    "methodology.routing.kind: got 'none' with several Dynamo workers in a role; the frontend "
                    "must route between them: set 'round-robin' or 'kv-aware'"
                )
            return []
        raise ConfigurationError(
            f"methodology.routing.kind: got {routing!r}; the dynamo adapter maps 'kv-aware' (--router-mode kv) and "
            "'round-robin' only"
        )

    def launch_plan(self, recipe: Recipe, port: int, python: Path, model_dir: Path | None) -> LaunchPlan:
        settings = recipe.engine.dynamo
        if settings is None:  # the schema requires it; kept for recipes built in code
            raise ConfigurationError("engine.dynamo: missing; set engine.dynamo.backend (vllm, sglang or trtllm)")
        if model_dir is None:
            raise ConfigurationError(f"model.source: {recipe.model.source.kind!r} needs a model directory for Dynamo")
        hardware = load_hardware_registry().get(recipe.hardware)
        if hardware is None:
            raise ConfigurationError(f"hardware: got {recipe.hardware!r}; expected a key of recipes/hardware.yaml")
        router = self.methodology_flags(recipe)
        kv_router = recipe.methodology.routing.kind == "kv-aware"
        if settings.discovery == "file":
            # Every process runs in the job's directory (the runner's working directory for the engine), so the
            # relative store is one per job: nothing registered by an earlier run is found.
            planes = ["--discovery-backend", "file", "--request-plane", "tcp", "--event-plane", "zmq"]
            local = remote = {FILE_STORE_VARIABLE: FILE_STORE}
            processes: list[ProcessSpec] = []
        else:
            planes = []
            local = {"ETCD_ENDPOINTS": f"http://127.0.0.1:{ETCD_PORT}", "NATS_SERVER": f"nats://127.0.0.1:{NATS_PORT}"}
            remote = {
                "ETCD_ENDPOINTS": f"http://{LEADER_HOST}:{ETCD_PORT}",
                "NATS_SERVER": f"nats://{LEADER_HOST}:{NATS_PORT}",
            }
            etcd = [
                "etcd",
                "--listen-client-urls", f"http://0.0.0.0:{ETCD_PORT}",
                "--advertise-client-urls", f"http://{LEADER_HOST}:{ETCD_PORT}",
            ]  # fmt: skip
            processes = [
                ProcessSpec(role="etcd", index=0, argv=etcd),
                ProcessSpec(role="nats", index=0, argv=["nats-server", "-js", "--port", str(NATS_PORT)]),
            ]
        frontend = ProcessSpec(
            role="frontend",
            index=0,
            argv=[str(python), "-m", "dynamo.frontend", "--http-port", str(port), *router, *planes],
            env=local,
        )
        processes.append(frontend)
        ordinal = 0
        for role, group, where in _worker_groups(recipe.parallelism):
            nodes = _nodes_per_worker(group, hardware.gpus_per_node, where)
            # The role's workers run with its own settings over the recipe's (engine.per_role).
            in_role = recipe.model_copy(update={"engine": recipe.engine.for_role(role)})
            for index in range(group.num_workers):
                builder = _WORKER_BUILDERS[settings.backend]
                argv, files = builder(in_role, group, where, role, nodes, str(python), str(model_dir))
                if kv_router and settings.backend in ("vllm", "sglang"):
                    argv += _events_config(settings.backend, KV_EVENT_PORT_BASE + ordinal)
                argv += planes + in_role.engine.extra_args
                processes.append(
                    ProcessSpec(
                        role=role,
                        index=index,
                        argv=argv,
                        env={**remote, **methodology_env(in_role, _worker_env(settings.backend, in_role))},
                        accelerators=group.tp * group.pp * group.dp,
                        nodes=nodes,
                        files=files,
                    )
                )
                ordinal += 1
        return LaunchPlan(
            argv=frontend.argv,
            env=frontend.env,
            port=port,
            served_model=recipe.model.name,
            model_dir=model_dir,
            health_path="/v1/models",
            ready_model=recipe.model.name,
            processes=processes,
            image=container_image(recipe),
            ready_workers=sum(group.num_workers for _, group, _ in _worker_groups(recipe.parallelism)),
            # The KV router binds a session to the worker holding its prefix by this header (AIPerf's
            # AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID in InferenceX's AgentX recipes).
            session_headers=("X-Session-ID", *(("X-Dynamo-Session-ID",) if kv_router else ())),
            parent_session_headers=("X-Dynamo-Parent-Session-ID",) if kv_router else (),
        )


# Variables a worker's backend takes for pinned speculative acceptance (vLLM's setting is in its flags; the mocker
# refuses speculative decoding).
_SPECULATIVE_ENV = {"sglang": sglang.speculative_env, "trtllm": trtllm.speculative_env}


def _worker_env(backend: str, recipe: Recipe) -> dict[str, str]:
    speculative_env = _SPECULATIVE_ENV.get(backend)
    return speculative_env(recipe.methodology.speculative_decoding) if speculative_env else {}


def _disaggregation_mode(role: str) -> list[str]:
    return ["--disaggregation-mode", role] if role in ("prefill", "decode") else []


def _sglang_worker(
    recipe: Recipe, group: WorkerGroup, where: str, role: str, nodes: int, python: str, model_dir: str
) -> tuple[list[str], dict[str, str]]:
    ranks = sglang.world_size(group)
    argv = [
        python, "-m", "dynamo.sglang",
        "--model-path", model_dir,
        "--served-model-name", recipe.model.name,
        "--context-length", str(recipe.engine.max_model_len),
        *sglang.parallel_args(group, where),
        *sglang.precision_args(recipe),
        *sglang.tuning_args(recipe),
        *_disaggregation_mode(role),
    ]  # fmt: skip
    disaggregated = recipe.parallelism.disaggregated
    if disaggregated is not None:
        argv += ["--disaggregation-transfer-backend", disaggregated.kv_transfer]
    if nodes > 1:
        argv += ["--nnodes", str(nodes), "--node-rank", NODE_RANK, "--dist-init-addr", DIST_INIT_ADDR]
    knobs = recipe.methodology
    argv += [] if knobs.prefix_caching else ["--disable-radix-cache"]
    if knobs.routing.kind == "round-robin":  # round robin all the way: the frontend over workers, a worker over its
        argv += ["--load-balance-method", "round_robin"]  # data-parallel ranks (as NVIDIA's srt-slurm recipes set it)
    argv += sglang.speculative_args(knobs.speculative_decoding)
    if role != "decode":  # the DRAM tier serves reused prefixes, which prefill (or an aggregated worker) computes
        argv += sglang.hicache_args(recipe, ranks)
    return argv, {}


def _single_host(backend: str, nodes: int, where: str) -> None:
    if nodes > 1:
        raise ConfigurationError(
            f"{where}: one {backend} worker would span {nodes} hosts; the dynamo adapter renders multi-host workers "
            "for the sglang backend only (vLLM needs Ray or per-rank launches, TensorRT-LLM an MPI launch)"
        )


def _not_mooncake(recipe: Recipe, backend: str) -> None:
    disaggregated = recipe.parallelism.disaggregated
    if disaggregated is not None and disaggregated.kv_transfer != "nixl":
        raise ConfigurationError(
            f"parallelism.disaggregated.kv_transfer: got {disaggregated.kv_transfer!r}; Dynamo's {backend} workers "
            "transfer KV with NIXL only (Mooncake is an SGLang transfer backend)"
        )


def _vllm_worker(
    recipe: Recipe, group: WorkerGroup, where: str, role: str, nodes: int, python: str, model_dir: str
) -> tuple[list[str], dict[str, str]]:
    _single_host("vLLM", nodes, where)
    _not_mooncake(recipe, "vLLM")
    if recipe.methodology.kv_offload.backend != "none":
        raise ConfigurationError(
            "methodology.kv_offload.backend: got 'dram'; Dynamo's vLLM workers already use a KV connector (NIXL), "
            "and combining it with vLLM's DRAM offload connector is not mapped (use dynamo.backend 'sglang')"
        )
    if group.dp_attention and group.dp == 1:
        raise ConfigurationError(f"{where}.dp_attention: got True with {where}.dp 1; set the attention replicas")
    argv = [
        python, "-m", "dynamo.vllm",
        "--model", model_dir,
        "--served-model-name", recipe.model.name,
        "--max-model-len", str(recipe.engine.max_model_len),
        "--tensor-parallel-size", str(group.tp),
        "--pipeline-parallel-size", str(group.pp),
    ]  # fmt: skip
    if group.dp > 1:  # vLLM's attention DP: dp ranks (with expert parallelism for MoE layers)
        argv += ["--data-parallel-size", str(group.dp)]
    if group.ep > 1:
        argv += ["--enable-expert-parallel"]
    if recipe.precision in _VLLM_DTYPES:
        argv += ["--dtype", _VLLM_DTYPES[recipe.precision]]
    elif recipe.precision == "fp8":
        argv += ["--quantization", "fp8"]
    argv += vllm_engine_args(recipe) + _disaggregation_mode(role)
    if role in ("prefill", "decode"):
        argv += ["--kv-transfer-config", NIXL_CONNECTOR]
    argv += vllm_prefix_args(recipe) + vllm_speculative_args(recipe.methodology.speculative_decoding)
    return argv, {}


def _trtllm_worker(
    recipe: Recipe, group: WorkerGroup, where: str, role: str, nodes: int, python: str, model_dir: str
) -> tuple[list[str], dict[str, str]]:
    _single_host("TensorRT-LLM", nodes, where)
    _not_mooncake(recipe, "TensorRT-LLM")
    options = trtllm.llm_api_options(recipe, group, where)
    if role in ("prefill", "decode"):
        options["cache_transceiver_config"] = {"backend": "NIXL"}
    name = f"trtllm-{role}.yaml"
    argv = [
        python, "-m", "dynamo.trtllm",
        "--model-path", model_dir,
        "--served-model-name", recipe.model.name,
        "--extra-engine-args", name,
        *_disaggregation_mode(role),
    ]  # fmt: skip
    if recipe.methodology.routing.kind == "kv-aware":
        argv += ["--publish-events-and-metrics"]
    return argv, {name: trtllm.options_yaml(options)}


def _mocker_worker(
    recipe: Recipe, group: WorkerGroup, where: str, role: str, nodes: int, python: str, model_dir: str
) -> tuple[list[str], dict[str, str]]:
    """Dynamo's mocker: a worker that answers like an engine on the real Dynamo runtime (registration, router, KV
    events, disaggregated hand-off) with simulated timing. It publishes KV events itself (no ZMQ flags)."""
    _single_host("mocker", nodes, where)
    knobs = recipe.methodology
    if knobs.kv_offload.backend != "none":
        raise ConfigurationError(
            f"methodology.kv_offload.backend: got {knobs.kv_offload.backend!r}; the dynamo adapter does not map the "
            "mocker's host-block tier yet (use 'none')"
        )
    if knobs.speculative_decoding is not None:
        raise ConfigurationError(
            "methodology.speculative_decoding: the mocker worker does not simulate speculative decoding (unset it)"
        )
    argv = [
        python, "-m", "dynamo.mocker",
        "--model-path", model_dir,
        "--model-name", recipe.model.name,
        "--max-model-len", str(recipe.engine.max_model_len),
        "--enable-prefix-caching" if knobs.prefix_caching else "--no-enable-prefix-caching",
        *_disaggregation_mode(role),
    ]  # fmt: skip
    # The mocker takes vLLM's names for the tuning fields (its CLI is vLLM-style).
    return argv + vllm_engine_args(recipe), {}


_WORKER_BUILDERS = {"sglang": _sglang_worker, "vllm": _vllm_worker, "trtllm": _trtllm_worker, "mocker": _mocker_worker}
