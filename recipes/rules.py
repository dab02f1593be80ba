"""Methodology and consistency rules of a recipe: a registry of named checks, each with its messages.

A rule is a function `(recipe, context) -> list[Problem]` registered with `@rule(name, *messages)`.
Its docstring says why the rule exists (docs/METHODOLOGY.md quotes it), and every problem it can report
is one of its declared `Message`s: a field path and the expected-text, both `str.format` templates.
`RecipeError` turns each problem into `field 'F': got V; EXPECTED`.

Rules read typed recipe fields only, never free-form engine arguments (except to reject methodology
settings smuggled into them). A rule that cannot check something (a figure the hardware registry lacks)
records a note saying so and reports no problem.

`python -m recipes.rules` prints the rules section of docs/METHODOLOGY.md; `--write FILE` replaces that
section in FILE (between the `rules:begin` and `rules:end` markers). A test keeps the doc in sync.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Formatter
from typing import Any, Literal, NamedTuple

from recipes.doc_sections import replace_section, section_cli
from recipes.errors import MISSING, RecipeError
from recipes.hardware import Hardware
from recipes.registry import Registry
from recipes.schema import (
    ACCURACY_QUESTION_SETS,
    AccuracyQuestionFile,
    AgenticReplayWorkload,
    ContainerEnvironment,
    FixedLengthWorkload,
    Recipe,
    WorkerGroup,
    methodology_knob_of,
    serves_dummy_weights,
)
from recipes.validity import checks_markdown
from recipes.yamlio import load_validated


class Problem(NamedTuple):
    """One broken rule: the field, the value found (or MISSING) and what was expected."""

    field: str
    value: Any
    expected: str


@dataclass(frozen=True)
class Message:
    """A problem a rule can report: field path and expected-text templates (`str.format` fields)."""

    field: str
    expected: str
    quotes_value: bool = True  # False for a field reported as absent (the problem's value is MISSING)

    def __call__(self, value: Any, **values: Any) -> Problem:
        return Problem(self.field.format(**values), value, self.expected.format(**values))

    @property
    def display(self) -> str:
        """The message as docs show it: `field 'F': got <value>; EXPECTED`, placeholders as `{name}`."""
        got = "got <value>; " if self.quotes_value else ""
        return f"field '{_placeholders(self.field)}': {got}{_placeholders(self.expected)}"


def _placeholders(template: str) -> str:
    """A format template for readers: `{name}` for each field (format specs dropped), braces unescaped."""
    return "".join(
        literal + ("" if name is None else f"{{{name}}}") for literal, name, _spec, _conv in Formatter().parse(template)
    )


@dataclass
class RuleContext:
    """What rules may consult besides the recipe: the hardware registry and the recipe's file."""

    hardware: dict[str, Hardware]
    path: str = "<recipe>"
    notes: list[tuple[str, str]] = field(default_factory=list)
    current_rule: str = ""

    def note(self, text: str) -> None:
        """Record something the current rule could not check (reported, never an error)."""
        self.notes.append((self.current_rule, text))


RuleCheck = Callable[[Recipe, RuleContext], list[Problem]]


@dataclass(frozen=True)
class Rule:
    name: str
    kind: Literal["methodology", "consistency"]
    check: RuleCheck
    messages: tuple[Message, ...]

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.check) or ""


RULES: Registry[Rule] = Registry("rule")


def rule(name: str, *messages: Message, kind: Literal["methodology", "consistency"] = "methodology"):
    """Register a rule under `name` with the messages it may report."""

    def register(check: RuleCheck) -> RuleCheck:
        if not inspect.getdoc(check):
            raise ValueError(f"rule {name!r} needs a docstring (docs/METHODOLOGY.md quotes it)")
        RULES.register(name, Rule(name=name, kind=kind, check=check, messages=messages))
        return check

    return register


@dataclass(frozen=True)
class RulesReport:
    problems: list[Problem]
    notes: list[tuple[str, str]]  # (rule name, what it could not check)


def run_rules(recipe: Recipe, context: RuleContext) -> RulesReport:
    """Every registered rule, in registration order; problems of all rules together."""
    problems: list[Problem] = []
    for name, registered in RULES.items():
        context.current_rule = name
        problems.extend(registered.check(recipe, context))
    context.current_rule = ""
    return RulesReport(problems=problems, notes=list(context.notes))


def check_recipe(recipe: Recipe, path: str, hardware: dict[str, Hardware]) -> None:
    """Raise one RecipeError listing every problem of every rule (nothing when all hold)."""
    report = run_rules(recipe, RuleContext(hardware=hardware, path=path))
    if report.problems:
        raise RecipeError(path, [tuple(problem) for problem in report.problems])


# --- consistency -----------------------------------------------------------------------------------

CATALOGUE_DIRECTORY = Path(__file__).resolve().parent / "catalogue"
REFERENCE_MISSING = Message(
    "reference",
    "a catalogue recipe names the public configuration it reproduces (reference.reproduces: project, "
    "repository, file, key, commit) or why it is its own layout (reference.own)",
    quotes_value=False,
)


@rule("catalogue-recipes-cite-a-reference", REFERENCE_MISSING, kind="consistency")
def catalogue_recipes_cite_a_reference(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Every recipe of the catalogue (recipes/catalogue/) says where its layout and settings come from: the
    public configuration it reproduces, pinned to a commit, or why it is its own. "Is each vendor's engine tuned
    fairly?" is answered by pointing at the vendor's published configuration (docs/RECIPES.md)."""
    in_catalogue = CATALOGUE_DIRECTORY in Path(context.path).resolve().parents
    return [REFERENCE_MISSING(MISSING)] if in_catalogue and recipe.reference is None else []


HARDWARE_UNKNOWN = Message("hardware", "expected a key of recipes/hardware.yaml: {known}")


@rule("hardware-exists", HARDWARE_UNKNOWN, kind="consistency")
def hardware_exists(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """The hardware pool must be a key of the hardware registry (recipes/hardware.yaml): its figures (units
    per node, cost, power) are what per-GPU, cost and power numbers are computed with."""
    if recipe.hardware in context.hardware:
        return []
    return [HARDWARE_UNKNOWN(recipe.hardware, known=", ".join(sorted(context.hardware)))]


RAW_METHODOLOGY_ARGUMENT = Message(
    "engine.{where}extra_args[{index}]",
    "methodology settings are typed fields: set methodology.{knob} instead of a raw argument",
)


@rule("methodology-settings-typed", RAW_METHODOLOGY_ARGUMENT)
def methodology_settings_typed(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Prefix caching, speculative decoding, KV offload and routing are set through typed
    `methodology` fields, which each engine adapter turns into its own flags. The same settings in
    raw `engine.extra_args` are rejected (any engine's spelling, `--a_b` or `--a-b=x`): otherwise the
    other rules could not see them, and two engines could be configured unfairly differently. A role's own
    arguments (`engine.per_role.<role>.extra_args`) are checked the same way."""
    argument_lists = [("", recipe.engine.extra_args)] + [
        (f"per_role.{role}.", settings.get("extra_args", [])) for role, settings in recipe.engine.per_role.items()
    ]
    problems = []
    for where, arguments in argument_lists:
        for index, argument in enumerate(arguments):
            knob = methodology_knob_of(argument)
            if knob is not None:
                problems.append(RAW_METHODOLOGY_ARGUMENT(argument, where=where, index=index, knob=knob))
    return problems


PREFIX_CACHING_ON = Message(
    "methodology.prefix_caching", "random-token workloads (workload.kind 'fixed-length') require prefix caching off"
)


@rule("prefix-caching-off-for-random-tokens", PREFIX_CACHING_ON)
def prefix_caching_off_for_random_tokens(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Fixed-length workloads send random token ids. Any prefix an engine could reuse between them is an
    accident of the sampler, so a cache only adds noise (and an engine that happens to hit it looks
    faster than it is). InferenceX measures with prefix caching off; so do we."""
    if isinstance(recipe.workload, FixedLengthWorkload) and recipe.methodology.prefix_caching:
        return [PREFIX_CACHING_ON(True)]
    return []


SEQUENCE_TOO_LONG = Message(
    "workload.sequences[{index}].isl",
    "isl + osl ({isl} + {osl}) must fit in engine.max_model_len ({max_model_len})",
)


@rule("sequences-fit-max-model-len", SEQUENCE_TOO_LONG, kind="consistency")
def sequences_fit_max_model_len(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Every ISL/OSL pair must fit in the engine's context (`engine.max_model_len`): a request that does
    not fit is refused by the engine, and the Point would measure errors instead of serving."""
    workload = recipe.workload
    if not isinstance(workload, FixedLengthWorkload):
        return []
    limit = recipe.engine.max_model_len
    return [
        SEQUENCE_TOO_LONG(lengths.isl, index=index, isl=lengths.isl, osl=lengths.osl, max_model_len=limit)
        for index, lengths in enumerate(workload.sequences)
        if lengths.isl + lengths.osl > limit
    ]


LEVEL_NOT_RUN = Message(
    "engine.per_concurrency", "each load level listed must be one the workload runs (workload.concurrency: {levels})"
)


@rule("per-concurrency-levels-run", LEVEL_NOT_RUN, kind="consistency")
def per_concurrency_levels_run(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Settings for a load level the workload never runs would launch nothing: most likely a typo in the level."""
    levels = sorted(set(recipe.workload.concurrency))
    return [LEVEL_NOT_RUN(level, levels=levels) for level in recipe.engine.per_concurrency if level not in levels]


ROLE_WITHOUT_DISAGGREGATION = Message(
    "engine.per_role", "per-role settings need prefill and decode workers (set parallelism.disaggregated)"
)


@rule("per-role-needs-disaggregation", ROLE_WITHOUT_DISAGGREGATION, kind="consistency")
def per_role_needs_disaggregation(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Settings for prefill or decode workers in a recipe that has none would launch nothing with them."""
    if recipe.parallelism.disaggregated is not None:
        return []
    return [ROLE_WITHOUT_DISAGGREGATION(role) for role in recipe.engine.per_role]


TRACE_MISSING = Message("workload.trace", "expected an existing trace file")


@rule("trace-exists", TRACE_MISSING, kind="consistency")
def trace_exists(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """An agentic replay needs its trace file (relative paths are relative to the recipe file)."""
    workload = recipe.workload
    if isinstance(workload, AgenticReplayWorkload) and not Path(workload.trace).is_file():
        return [TRACE_MISSING(workload.trace)]
    return []


ENVIRONMENT_KIND = Message(
    "engine.environment.kind",
    "only the simulated engine runs in environment kind 'project', and it runs nowhere else but in a 'container' "
    "that mounts the project",
)
SIMULATED_SETTINGS = Message("engine.simulated", "only allowed when engine.kind is 'simulated'")


@rule("engine-environment-matches-kind", ENVIRONMENT_KIND, SIMULATED_SETTINGS, kind="consistency")
def engine_environment_matches_kind(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """The simulated engine runs with the project's own Python (environment kind `project`, or a container
    that mounts the project: how container launching is tested without a GPU engine image), and no other
    engine may use `project`; `engine.simulated` settings only mean something to the simulated engine."""
    problems = []
    is_simulated = recipe.engine.kind == "simulated"
    allowed = ("project", "container") if is_simulated else ("venv", "container")
    if recipe.engine.environment.kind not in allowed:
        problems.append(ENVIRONMENT_KIND(recipe.engine.environment.kind))
    if recipe.engine.simulated is not None and not is_simulated:
        problems.append(SIMULATED_SETTINGS("..."))
    return problems


# --- methodology -----------------------------------------------------------------------------------

ROUTING_FOR_AGENTIC = Message(
    "methodology.routing.kind",
    "agentic-replay workloads on more than one engine worker ({workers}) need KV-aware routing or session "
    "affinity, so a session's next request reaches the worker that caches its prefix: expected 'kv-aware' "
    "or 'session-affinity'",
)
SESSION_AWARE_ROUTING = ("kv-aware", "session-affinity")


def _group_workers(group: WorkerGroup) -> int:
    return group.num_workers * group.dp


@rule("session-affinity-for-multi-worker-agentic", ROUTING_FOR_AGENTIC)
def session_affinity_for_multi_worker_agentic(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """An agentic session re-sends its whole growing history every turn; the prefix cache that makes this
    cheap lives on one worker. With several engine workers (`parallelism.dp` > 1, or a disaggregated
    group with more than one worker: `num_workers` x `dp` > 1), a router that ignores sessions spreads
    each session's turns over workers that do not hold its prefix, and the benchmark measures
    recomputation instead of serving. So the routing must be KV-aware (route by cached prefix overlap)
    or session-affine (every request of a session to one worker), as InferenceX's AgentX requires."""
    if not isinstance(recipe.workload, AgenticReplayWorkload):
        return []
    parallel = recipe.parallelism
    if parallel.disaggregated is None:
        if parallel.dp <= 1:
            return []
        workers = f"parallelism.dp {parallel.dp}"
    else:
        prefill = _group_workers(parallel.disaggregated.prefill)
        decode = _group_workers(parallel.disaggregated.decode)
        if max(prefill, decode) <= 1:
            return []
        workers = f"disaggregated: {prefill} prefill, {decode} decode workers"
    if recipe.methodology.routing.kind in SESSION_AWARE_ROUTING:
        return []
    return [ROUTING_FOR_AGENTIC(recipe.methodology.routing.kind, workers=workers)]


# InferenceX's agentic DRAM ceiling: min(host DRAM, 3 TB) x utilisation x (GPUs used / GPUs per node).
DRAM_CEILING_BYTES_PER_NODE = 3 * 10**12  # 3 TB (decimal)
DRAM_CEILING_GIB_PER_NODE = DRAM_CEILING_BYTES_PER_NODE / 2**30
OFFLOAD_NOT_AGENTIC = Message(
    "methodology.kv_offload.backend",
    "KV offload to DRAM is for agentic-replay workloads: random-token prompts (workload.kind 'fixed-length') "
    "never reuse KV, so a DRAM tier has nothing to serve; expected 'none'",
)
OFFLOAD_OVER_CEILING = Message(
    "methodology.kv_offload.dram_gib",
    "at most {ceiling:g} GiB: the DRAM offload ceiling is 3 TB ({per_node:g} GiB) per node, times the nodes "
    "the engine uses ({accelerators} {unit}s of {per_node_units} per node on '{hardware}')",
)


@rule("dram-offload-budget", OFFLOAD_NOT_AGENTIC, OFFLOAD_OVER_CEILING)
def dram_offload_budget(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """A DRAM tier behind the KV cache (`methodology.kv_offload.backend: dram`) pays off only when prefixes
    come back: agentic sessions re-send their history, random-token prompts never do, so offload is for
    agentic-replay workloads only. Its size, `dram_gib` (the DRAM the whole engine gives the KV cache,
    in GiB), follows InferenceX's budget: min(host DRAM, 3 TB) x utilisation x (accelerators used /
    accelerators per node). The hardware registry has no host-DRAM figure, so that term cannot be
    checked and is skipped (a note says so); the 3 TB ceiling is checked with utilisation 1, the most a
    recipe may claim: `dram_gib` <= 3 TB x accelerators / `gpus_per_node` of the hardware."""
    offload = recipe.methodology.kv_offload
    if offload.backend != "dram":
        return []
    problems = []
    if not isinstance(recipe.workload, AgenticReplayWorkload):
        problems.append(OFFLOAD_NOT_AGENTIC(offload.backend))
    hardware = context.hardware.get(recipe.hardware)
    if hardware is None or offload.dram_gib is None:
        return problems  # hardware-exists reports the key; the schema requires dram_gib with 'dram'
    context.note(
        f"the hardware registry has no host-DRAM figure for '{recipe.hardware}': "
        "dram_gib is checked against the 3 TB ceiling only, not against the host's memory"
    )
    accelerators = recipe.parallelism.accelerators
    ceiling = DRAM_CEILING_GIB_PER_NODE * accelerators / hardware.gpus_per_node
    if offload.dram_gib > ceiling + 1e-9:
        problems.append(
            OFFLOAD_OVER_CEILING(
                offload.dram_gib,
                ceiling=round(ceiling, 1),
                per_node=round(DRAM_CEILING_GIB_PER_NODE, 1),
                accelerators=accelerators,
                unit=hardware.accelerator_unit,
                per_node_units=hardware.gpus_per_node,
                hardware=recipe.hardware,
            )
        )
    return problems


SPECULATION_UNPINNED = Message(
    "methodology.speculative_decoding.golden_acceptance_length",
    "speculative decoding ({method}) needs a pinned acceptance length: random-token prompts make the real "
    "acceptance rate meaningless, so results are comparable only at a stated golden_acceptance_length",
    quotes_value=False,
)


@rule("speculative-decoding-pinned", SPECULATION_UNPINNED)
def speculative_decoding_pinned(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Speculative decoding's speed-up is its acceptance length (tokens accepted per step), which depends on
    the text: on random-token prompts drafts are almost never accepted, on a repetitive trace almost
    always. A run is comparable with another only at the same, stated acceptance length, so a recipe
    with `methodology.speculative_decoding` must pin `golden_acceptance_length`, as InferenceX does."""
    spec = recipe.methodology.speculative_decoding
    if spec is not None and spec.golden_acceptance_length is None:
        return [SPECULATION_UNPINNED(MISSING, method=spec.method)]
    return []


IMAGE_UNPINNED = Message(
    "engine.environment.image",
    "a pinned image: a version tag other than {moving}, or an @sha256: digest ({why})",
)
MOVING_TAGS = ("latest", "nightly", "main", "master", "dev", "stable")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def image_pin_problem(image: str) -> str | None:
    """Why the image reference is not pinned, or None when it is (a digest, or a fixed tag)."""
    name, at, digest = image.partition("@")
    if at:
        return None if _DIGEST.fullmatch(digest) else "a digest is sha256: followed by 64 lowercase hex digits"
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return "no tag means 'latest', which moves with every release"
    tag = last.split(":", 1)[1]
    if tag in MOVING_TAGS:
        return f"'{tag}' moves with every release"
    return None


# A release at the start of a tag, after an optional engine name: "v0.5.6-cu129-amd64" -> 0.5.6, "1.2.0rc2",
# "v0.5.6.post1-rocm700-mi35x" -> 0.5.6.post1, "sglang-0.5.6.post1-rocm700-mi35x-mori-1224" -> 0.5.6.post1.
_TAG_RELEASE = re.compile(r"(?:[a-z][a-z-]*-)?v?(\d+(?:\.\d+)+(?:\.?(?:rc|post|a|b)\d+)?)(?:[-_+].*)?")
# NGC's monthly containers (tritonserver:25.08-trtllm-python-py3) name the container's month, not the engine's release.
_CONTAINER_MONTH = re.compile(r"(?:2\d)\.(?:0[1-9]|1[0-2])")


def image_tag_version(image: str) -> str | None:
    """The engine release an image's tag names ('lmsysorg/sglang:v0.5.6-cu129-amd64' -> '0.5.6'), or None (no tag, a
    digest alone, a moving tag such as 'latest', or a container month such as NGC's '25.08')."""
    last = image.partition("@")[0].rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    match = _TAG_RELEASE.fullmatch(last.split(":", 1)[1])
    if match is None or _CONTAINER_MONTH.fullmatch(match.group(1)):
        return None
    return match.group(1)


@rule("images-pinned", IMAGE_UNPINNED)
def images_pinned(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """A result must say exactly which software produced it, and a rerun must get the same software. A
    container image named without a tag, or by a moving tag (latest, nightly, main, master, dev,
    stable), changes under the recipe; a version tag or an `@sha256:` digest does not."""
    environment = recipe.engine.environment
    if not isinstance(environment, ContainerEnvironment):
        return []
    why = image_pin_problem(environment.image)
    if why is None:
        return []
    moving = ", ".join(f"'{tag}'" for tag in MOVING_TAGS)
    return [IMAGE_UNPINNED(environment.image, moving=moving, why=why)]


PARALLELISM_BESIDE_GROUPS = Message(
    "parallelism.{name}",
    "with parallelism.disaggregated set, the prefill and decode groups carry the parallelism and the per-GPU "
    "divisor counts only their accelerators: leave parallelism.{name} at its default ({default})",
)
EXPERTS_BEYOND_WORKER = Message(
    "{where}.ep",
    "expert parallelism spreads experts over the worker's own accelerators: ep must be at most "
    "tp x pp x dp ({tp} x {pp} x {dp} = {size}), or the per-GPU divisor would leave accelerators out",
)


@rule("per-gpu-normalisation", PARALLELISM_BESIDE_GROUPS, EXPERTS_BEYOND_WORKER)
def per_gpu_normalisation(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Every per-GPU figure (throughput, cost, power) divides by the accelerators the engine uses:
    tp x pp x dp, or for disaggregated serving the sum over the prefill and decode groups of
    num_workers x tp x pp x dp (docs/ARCHITECTURE.md §4; `Parallelism.accelerators`). The recipe must not be
    able to hide accelerators from that divisor. Checked, because each is clearly wrong: top-level
    tp/pp/dp/ep/dp_attention set beside `disaggregated` (the groups replace them, so the value would be
    silently ignored); and ep larger than its worker's tp x pp x dp (experts on accelerators the divisor
    does not count). Not checked: how workers map onto nodes (a TP4 engine on an 8-GPU node divides by
    4, as InferenceX does) and dp_attention conventions (engines differ; the adapter translates)."""
    parallel = recipe.parallelism
    problems = []
    if parallel.disaggregated is not None:
        for name in ("tp", "ep", "pp", "dp", "dp_attention"):
            value = getattr(parallel, name)
            default = type(parallel).model_fields[name].default
            if value != default:
                problems.append(PARALLELISM_BESIDE_GROUPS(value, name=name, default=default))
        groups: list[tuple[str, Any]] = [
            ("parallelism.disaggregated.prefill", parallel.disaggregated.prefill),
            ("parallelism.disaggregated.decode", parallel.disaggregated.decode),
        ]
    else:
        groups = [("parallelism", parallel)]
    for where, group in groups:
        size = group.tp * group.pp * group.dp
        if group.ep > size:
            problems.append(
                EXPERTS_BEYOND_WORKER(group.ep, where=where, tp=group.tp, pp=group.pp, dp=group.dp, size=size)
            )
    return problems


GATE_OFF_WITHOUT_REASON = Message(
    "methodology.accuracy_gate.enabled",
    "a recipe serving real weights (model.source.kind '{kind}') runs the accuracy gate before measuring; "
    "to turn it off, say why in methodology.accuracy_gate.reason",
)
GATE_REASON_WHILE_ON = Message(
    "methodology.accuracy_gate.reason", "only meaningful when methodology.accuracy_gate.enabled is false"
)
GATE_ON_WITH_PINNED_ACCEPTANCE = Message(
    "methodology.accuracy_gate.enabled",
    "pinned acceptance (speculative_decoding.golden_acceptance_length {length:g}) makes the engine accept drafted "
    "tokens whatever the model predicts, so its answers are wrong by design: turn the gate off and say so in "
    "methodology.accuracy_gate.reason (InferenceX runs its accuracy eval in a separate launch without the pin)",
)
GATE_QUESTIONS_MISSING = Message(
    "methodology.accuracy_gate.prompts", "a built-in question set ({sets}) or an existing YAML question file"
)
GATE_QUESTIONS_INVALID = Message(
    "methodology.accuracy_gate.prompts",
    "a YAML question file (questions: [{{prompt, answers}}, ...]): {detail}",
)


@rule(
    "accuracy-gate",
    GATE_OFF_WITHOUT_REASON,
    GATE_REASON_WHILE_ON,
    GATE_ON_WITH_PINNED_ACCEPTANCE,
    GATE_QUESTIONS_MISSING,
    GATE_QUESTIONS_INVALID,
)
def accuracy_gate(recipe: Recipe, context: RuleContext) -> list[Problem]:
    """Fast garbage is not a result: an engine that serves a broken quantisation, a wrong chat template or
    corrupted weights can be very fast. Before the first Point the runner asks a handful of questions
    with unambiguous short answers through the endpoint (`methodology.accuracy_gate`, runners/loadgen/accuracy.py);
    a configuration that scores below `min_accuracy` is marked invalid. With real weights
    (`model.source.kind` 'hub' or 'path') the gate may be disabled only with a stated `reason`. With
    dummy weights (a generated model, or `--load-format dummy`) it is skipped at run time, the reason
    recorded. A recipe that pins speculative acceptance (`golden_acceptance_length`) with real weights must turn the
    gate off with its reason: the pinned engine's answers are wrong by design, and the gate would fail every time.
    The question set must be a built-in one or a readable question file."""
    gate = recipe.methodology.accuracy_gate
    problems = []
    dummy = serves_dummy_weights(recipe.model.source, recipe.engine.extra_args)
    if not gate.enabled and gate.reason is None and not dummy:
        problems.append(GATE_OFF_WITHOUT_REASON(False, kind=recipe.model.source.kind))
    spec = recipe.methodology.speculative_decoding
    if gate.enabled and not dummy and spec is not None and spec.golden_acceptance_length is not None:
        problems.append(GATE_ON_WITH_PINNED_ACCEPTANCE(True, length=spec.golden_acceptance_length))
    if gate.enabled and gate.reason is not None:
        problems.append(GATE_REASON_WHILE_ON(gate.reason))
    if gate.prompts not in ACCURACY_QUESTION_SETS:
        path = Path(gate.prompts)
        if not path.is_file():
            problems.append(GATE_QUESTIONS_MISSING(gate.prompts, sets=", ".join(ACCURACY_QUESTION_SETS)))
        else:
            try:
                load_validated(path, AccuracyQuestionFile, "accuracy question file")
            except RecipeError as error:
                detail = "; ".join(f"{where}: {expected}" for where, _value, expected in error.problems)
                problems.append(GATE_QUESTIONS_INVALID(gate.prompts, detail=detail))
    return problems


# --- documentation ---------------------------------------------------------------------------------

BEGIN_MARKER = "<!-- rules:begin (generated by `python -m recipes.rules --write docs/METHODOLOGY.md`) -->"
END_MARKER = "<!-- rules:end -->"


def _message_line(message: Message) -> str:
    return f"- `{message.display}`"


def rules_markdown() -> str:
    """The rules section of docs/METHODOLOGY.md, generated from the registry."""
    lines: list[str] = []
    for kind, title in (("methodology", "Methodology rules"), ("consistency", "Consistency rules")):
        lines += [f"### {title}", ""]
        for registered in RULES.values():
            if registered.kind != kind:
                continue
            lines += [f"#### `{registered.name}`", "", registered.doc, "", "Messages:", ""]
            lines += [_message_line(message) for message in registered.messages]
            lines.append("")
    lines += [
        "### Validity checks",
        "",
        "After a Point runs, these checks judge it (`recipes/validity.py`): each origin applies the checks it can, and",
        "lists the rest as not checked with the verdict; any failed check makes the Point invalid, with its reason.",
        "",
        checks_markdown(),
    ]
    return "\n".join(lines).rstrip() + "\n"


def replace_rules_section(document: str) -> str:
    """`document` with the text between the markers replaced by the generated rules section."""
    return replace_section(document, BEGIN_MARKER, END_MARKER, rules_markdown())


def main(argv: list[str] | None = None) -> int:
    return section_cli(
        argv, "Print (or write into a document) the recipe rules section.", rules_markdown, BEGIN_MARKER, END_MARKER
    )


if __name__ == "__main__":
    raise SystemExit(main())
