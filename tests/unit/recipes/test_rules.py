"""Every recipe rule, broken by a recipe, with the exact message it gives (recipes/rules.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from recipes.errors import RecipeError
from recipes.hardware import load_hardware_registry
from recipes.loader import load_recipes, parse_recipe
from recipes.rules import (
    RULES,
    RuleContext,
    image_pin_problem,
    image_tag_version,
    replace_rules_section,
    rules_markdown,
    run_rules,
)
from tests.conftest import ROOT, SIMULATED_RECIPE, deep_update

TRACE = str(ROOT / "traces/claude-code-weka/sample_trace_with_subagent.json")
AGENTIC = {"kind": "agentic-replay", "trace": TRACE, "concurrency": [1, 2], "duration_s": 5}
CONTAINER = {
    "kind": "vllm",
    "environment": {"kind": "container", "image": "vllm/vllm-openai:v0.11.0"},
    "simulated": None,
}
DIGEST = "sha256:" + "0123456789abcdef" * 4


def data_of(changes: dict | None = None, **replace: object) -> dict:
    """The simulated base recipe with `changes` merged in and top-level keys in `replace` set as given."""
    data = deep_update(copy.deepcopy(SIMULATED_RECIPE), changes or {})
    data.update(replace)
    return data


def agentic(changes: dict | None = None) -> dict:
    return data_of(changes, workload=AGENTIC)


def real_weights(changes: dict | None = None) -> dict:
    return data_of(changes, model={"name": "tiny-llama", "source": {"kind": "path", "path": "/models/tiny"}})


PINNED_NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "golden_acceptance_length": 2.5}


def message_of(data: dict, path: str = "recipe.yaml") -> str:
    with pytest.raises(RecipeError) as caught:
        parse_recipe(data, path)
    return str(caught.value)


def one_problem(field_and_text: str, path: str = "recipe.yaml") -> str:
    return f"{path}: invalid recipe\n  {field_and_text}"


KNOWN_HARDWARE = ", ".join(sorted(load_hardware_registry()))

# A recipe file inside the catalogue (never written: the rule reads the path only).
IN_CATALOGUE = str(ROOT / "recipes" / "catalogue" / "b200" / "new-recipe.yaml")
# Rules that depend on where the recipe file lies, and the path their broken recipes are read from.
PATHS = {"catalogue-recipes-cite-a-reference": IN_CATALOGUE}

# rule name -> recipes that break it, each with the exact error message. Every registered rule has one.
BROKEN: dict[str, list[tuple[dict, str]]] = {
    "catalogue-recipes-cite-a-reference": [
        (
            data_of(),
            "field 'reference': a catalogue recipe names the public configuration it reproduces "
            "(reference.reproduces: project, repository, file, key, commit) or why it is its own layout "
            "(reference.own)",
        ),
    ],
    "hardware-exists": [
        (
            data_of({"hardware": "b2000"}),
            f"field 'hardware': got 'b2000'; expected a key of recipes/hardware.yaml: {KNOWN_HARDWARE}",
        ),
    ],
    "methodology-settings-typed": [
        (
            data_of({"engine": {"extra_args": ["--max-num-seqs", "8", "--enable-prefix-caching"]}}),
            "field 'engine.extra_args[2]': got '--enable-prefix-caching'; methodology settings are typed fields: "
            "set methodology.prefix_caching instead of a raw argument",
        ),
        (
            data_of({"engine": {"extra_args": ["--router-mode=kv"]}}),
            "field 'engine.extra_args[0]': got '--router-mode=kv'; methodology settings are typed fields: "
            "set methodology.routing instead of a raw argument",
        ),
        (
            data_of(
                {"engine": {"per_role": {"prefill": {"extra_args": ["--disable-radix-cache"]}}}},
                parallelism={"disaggregated": {"prefill": {"tp": 1}, "decode": {"tp": 1}}},
            ),
            "field 'engine.per_role.prefill.extra_args[0]': got '--disable-radix-cache'; methodology settings are "
            "typed fields: set methodology.prefix_caching instead of a raw argument",
        ),
    ],
    "prefix-caching-off-for-random-tokens": [
        (
            data_of({"methodology": {"prefix_caching": True}}),
            "field 'methodology.prefix_caching': got True; random-token workloads (workload.kind 'fixed-length') "
            "require prefix caching off",
        ),
    ],
    "per-concurrency-levels-run": [
        (
            data_of({"engine": {"per_concurrency": {16: {"cuda_graph_max_batch_size": 16}}}}),
            "field 'engine.per_concurrency': got 16; each load level listed must be one the workload runs "
            "(workload.concurrency: [1, 4])",
        ),
    ],
    "per-role-needs-disaggregation": [
        (
            data_of({"engine": {"per_role": {"decode": {"max_num_seqs": 16}}}}),
            "field 'engine.per_role': got 'decode'; per-role settings need prefill and decode workers (set "
            "parallelism.disaggregated)",
        ),
    ],
    "sequences-fit-max-model-len": [
        (
            data_of({"workload": {"sequences": [{"isl": 256, "osl": 32}, {"isl": 4000, "osl": 100}]}}),
            "field 'workload.sequences[1].isl': got 4000; isl + osl (4000 + 100) must fit in engine.max_model_len (4096)",
        ),
    ],
    "trace-exists": [
        (
            data_of(workload={**AGENTIC, "trace": "/no/such/trace.json"}),
            "field 'workload.trace': got '/no/such/trace.json'; expected an existing trace file",
        ),
    ],
    "engine-environment-matches-kind": [
        (
            data_of({"engine": {"kind": "vllm", "simulated": None}}),
            "field 'engine.environment.kind': got 'project'; "
            "only the simulated engine runs in environment kind 'project', and it runs nowhere else but in a "
            "'container' that mounts the project",
        ),
        (
            data_of({"engine": {"kind": "vllm", "environment": {"kind": "venv", "name": "vllm-cpu"}}}),
            "field 'engine.simulated': got '...'; only allowed when engine.kind is 'simulated'",
        ),
    ],
    "session-affinity-for-multi-worker-agentic": [
        (
            agentic({"hardware": "h100", "parallelism": {"dp": 2}}),
            "field 'methodology.routing.kind': got 'none'; agentic-replay workloads on more than one engine worker "
            "(parallelism.dp 2) need KV-aware routing or session affinity, so a session's next request reaches "
            "the worker that caches its prefix: expected 'kv-aware' or 'session-affinity'",
        ),
        (
            agentic(
                {
                    "hardware": "h100",
                    "parallelism": {"disaggregated": {"prefill": {"tp": 2}, "decode": {"tp": 2, "num_workers": 2}}},
                    "methodology": {"routing": {"kind": "round-robin"}},
                }
            ),
            "field 'methodology.routing.kind': got 'round-robin'; agentic-replay workloads on more than one engine "
            "worker (disaggregated: 1 prefill, 2 decode workers) need KV-aware routing or session affinity, so a "
            "session's next request reaches the worker that caches its prefix: expected 'kv-aware' or "
            "'session-affinity'",
        ),
    ],
    "dram-offload-budget": [
        (
            data_of({"methodology": {"kv_offload": {"backend": "dram", "dram_gib": 64}}}),
            "field 'methodology.kv_offload.backend': got 'dram'; KV offload to DRAM is for agentic-replay workloads: "
            "random-token prompts (workload.kind 'fixed-length') never reuse KV, so a DRAM tier has nothing to "
            "serve; expected 'none'",
        ),
        (
            agentic(
                {
                    "hardware": "h100",
                    "parallelism": {"tp": 4},
                    "methodology": {"kv_offload": {"backend": "dram", "dram_gib": 2000}},
                }
            ),
            "field 'methodology.kv_offload.dram_gib': got 2000.0; at most 1397 GiB: the DRAM offload ceiling is "
            "3 TB (2794 GiB) per node, times the nodes the engine uses (4 gpus of 8 per node on 'h100')",
        ),
    ],
    "speculative-decoding-pinned": [
        (
            data_of({"methodology": {"speculative_decoding": {"method": "mtp", "num_speculative_tokens": 2}}}),
            "field 'methodology.speculative_decoding.golden_acceptance_length': speculative decoding (mtp) needs a "
            "pinned acceptance length: random-token prompts make the real acceptance rate meaningless, so results "
            "are comparable only at a stated golden_acceptance_length",
        ),
    ],
    "images-pinned": [
        (
            data_of(
                engine={
                    **SIMULATED_RECIPE["engine"],
                    **CONTAINER,
                    "environment": {"kind": "container", "image": "vllm/vllm-openai"},
                }
            ),
            "field 'engine.environment.image': got 'vllm/vllm-openai'; a pinned image: a version tag other than "
            "'latest', 'nightly', 'main', 'master', 'dev', 'stable', or an @sha256: digest (no tag means 'latest', "
            "which moves with every release)",
        ),
        (
            data_of(
                engine={
                    **SIMULATED_RECIPE["engine"],
                    **CONTAINER,
                    "environment": {"kind": "container", "image": "lmsysorg/sglang:latest"},
                }
            ),
            "field 'engine.environment.image': got 'lmsysorg/sglang:latest'; a pinned image: a version tag other "
            "than 'latest', 'nightly', 'main', 'master', 'dev', 'stable', or an @sha256: digest ('latest' moves "
            "with every release)",
        ),
        (
            data_of(
                engine={
                    **SIMULATED_RECIPE["engine"],
                    **CONTAINER,
                    "environment": {"kind": "container", "image": "vllm/vllm-openai@sha256:abc"},
                }
            ),
            "field 'engine.environment.image': got 'vllm/vllm-openai@sha256:abc'; a pinned image: a version tag "
            "other than 'latest', 'nightly', 'main', 'master', 'dev', 'stable', or an @sha256: digest (a digest is "
            "sha256: followed by 64 lowercase hex digits)",
        ),
    ],
    "per-gpu-normalisation": [
        (
            data_of(
                {
                    "hardware": "h100",
                    "parallelism": {"tp": 8, "disaggregated": {"prefill": {"tp": 4}, "decode": {"tp": 4}}},
                }
            ),
            "field 'parallelism.tp': got 8; with parallelism.disaggregated set, the prefill and decode groups carry "
            "the parallelism and the per-GPU divisor counts only their accelerators: leave parallelism.tp at its "
            "default (1)",
        ),
        (
            data_of({"hardware": "h100", "parallelism": {"tp": 4, "ep": 8}}),
            "field 'parallelism.ep': got 8; expert parallelism spreads experts over the worker's own accelerators: "
            "ep must be at most tp x pp x dp (4 x 1 x 1 = 4), or the per-GPU divisor would leave accelerators out",
        ),
        (
            data_of(
                {
                    "hardware": "h100",
                    "parallelism": {"disaggregated": {"prefill": {"tp": 2, "ep": 4}, "decode": {"tp": 4}}},
                }
            ),
            "field 'parallelism.disaggregated.prefill.ep': got 4; expert parallelism spreads experts over the "
            "worker's own accelerators: ep must be at most tp x pp x dp (2 x 1 x 1 = 2), or the per-GPU divisor "
            "would leave accelerators out",
        ),
    ],
    "accuracy-gate": [
        (
            real_weights({"methodology": {"accuracy_gate": {"enabled": False}}}),
            "field 'methodology.accuracy_gate.enabled': got False; a recipe serving real weights (model.source.kind "
            "'path') runs the accuracy gate before measuring; to turn it off, say why in "
            "methodology.accuracy_gate.reason",
        ),
        (
            real_weights({"methodology": {"speculative_decoding": PINNED_NGRAM}}),
            "field 'methodology.accuracy_gate.enabled': got True; pinned acceptance (speculative_decoding."
            "golden_acceptance_length 2.5) makes the engine accept drafted tokens whatever the model predicts, so its "
            "answers are wrong by design: turn the gate off and say so in methodology.accuracy_gate.reason "
            "(InferenceX runs its accuracy eval in a separate launch without the pin)",
        ),
        (
            data_of({"methodology": {"accuracy_gate": {"reason": "too slow"}}}),
            "field 'methodology.accuracy_gate.reason': got 'too slow'; only meaningful when "
            "methodology.accuracy_gate.enabled is false",
        ),
        (
            data_of({"methodology": {"accuracy_gate": {"prompts": "/no/such/questions.yaml"}}}),
            "field 'methodology.accuracy_gate.prompts': got '/no/such/questions.yaml'; a built-in question set "
            "(basic) or an existing YAML question file",
        ),
    ],
}


def test_every_rule_is_broken_by_a_test() -> None:
    assert set(BROKEN) == set(RULES)


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [(name, data, expected) for name, cases in BROKEN.items() for data, expected in cases],
    ids=[f"{name}-{index}" for name, cases in BROKEN.items() for index in range(len(cases))],
)
def test_broken_rule_gives_its_exact_message(name: str, data: dict, expected: str) -> None:
    path = PATHS.get(name, "recipe.yaml")
    assert message_of(data, path) == one_problem(expected, path)
    # The problem comes from the rule it tests (and only that rule reports it).
    with pytest.raises(RecipeError) as caught:
        parse_recipe(data, path)
    assert len(caught.value.problems) == 1


def test_a_catalogue_reference_is_one_of_reproduces_or_own_and_outside_the_catalogue_optional() -> None:
    public = {"project": "InferenceX", "repository": "SemiAnalysisAI/InferenceX", "file": "configs/nvidia-master.yaml",
              "key": "dsr1-fp8-b200-sglang", "commit": "843c6254ff69b567f772f6a5fd97675af3d04431"}  # fmt: skip
    reproduces = parse_recipe(data_of(reference={"reproduces": public}), IN_CATALOGUE).recipe.reference
    assert reproduces is not None and reproduces.label == "reproduces InferenceX dsr1-fp8-b200-sglang"
    own = parse_recipe(data_of(reference={"own": "a layout of our own"}), IN_CATALOGUE).recipe.reference
    assert own is not None and own.label == "own layout"
    assert "exactly one of" in message_of(data_of(reference={"reproduces": public, "own": "both"}), IN_CATALOGUE)
    short = message_of(data_of(reference={"reproduces": {**public, "commit": "843c625"}}))
    assert "reference.reproduces.commit" in short and "'843c625'" in short  # a commit is pinned whole
    assert parse_recipe(data_of(), "recipe.yaml").recipe.reference is None  # outside the catalogue: optional


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(
            agentic({"hardware": "h100", "parallelism": {"dp": 2}, "methodology": {"routing": {"kind": kind}}}), id=kind
        )
        for kind in ("kv-aware", "session-affinity")
    ]
    + [
        pytest.param(agentic({"hardware": "h100", "parallelism": {"tp": 8}}), id="one-worker"),
        pytest.param(
            agentic(
                {"hardware": "h100", "parallelism": {"disaggregated": {"prefill": {"tp": 4}, "decode": {"tp": 4}}}}
            ),
            id="one-worker-per-group",
        ),
        pytest.param(data_of({"hardware": "h100", "parallelism": {"dp": 2}}), id="fixed-length-dp"),
    ],
)
def test_session_aware_routing_or_single_worker_passes(data: dict) -> None:
    parse_recipe(data, "recipe.yaml")


def test_dram_offload_within_the_ceiling_passes_with_a_note() -> None:
    data = agentic(
        {
            "hardware": "h100",
            "parallelism": {"tp": 8},
            "methodology": {"kv_offload": {"backend": "dram", "dram_gib": 2700}},
        }
    )
    loaded = parse_recipe(data, "recipe.yaml")
    report = run_rules(loaded.recipe, RuleContext(hardware=load_hardware_registry()))
    assert report.problems == []
    assert report.notes == [
        (
            "dram-offload-budget",
            "the hardware registry has no host-DRAM figure for 'h100': dram_gib is checked against the 3 TB "
            "ceiling only, not against the host's memory",
        )
    ]
    # Two 8-GPU nodes: twice the ceiling.
    data = agentic(
        {
            "hardware": "h100",
            "parallelism": {"tp": 8, "dp": 2},
            "methodology": {"kv_offload": {"backend": "dram", "dram_gib": 5500}, "routing": {"kind": "kv-aware"}},
        }
    )
    parse_recipe(data, "recipe.yaml")


def test_pinned_speculative_decoding_passes() -> None:
    spec = {"method": "mtp", "num_speculative_tokens": 2, "golden_acceptance_length": 2.5}
    parse_recipe(data_of({"methodology": {"speculative_decoding": spec}}), "recipe.yaml")


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("vllm/vllm-openai:v0.11.0", None),
        ("nvcr.io/nvidia/tritonserver:25.08-trtllm-python-py3", None),
        ("localhost:5000/engine:1.2", None),
        (f"vllm/vllm-openai@{DIGEST}", None),
        (f"vllm/vllm-openai:latest@{DIGEST}", None),
        ("localhost:5000/engine", "no tag means 'latest', which moves with every release"),
        ("rocm/vllm:nightly", "'nightly' moves with every release"),
        ("vllm/vllm-openai@sha256:ABC", "a digest is sha256: followed by 64 lowercase hex digits"),
    ],
)
def test_image_pinning(image: str, why: str | None) -> None:
    assert image_pin_problem(image) == why


@pytest.mark.parametrize(
    ("image", "version"),
    [  # the images of the real InferenceX rows (../shared/reference/inferencex-rows), then the cases without one
        ("lmsysorg/sglang:v0.5.6-cu129-amd64", "0.5.6"),
        ("lmsysorg/sglang:v0.5.6.post1-rocm700-mi35x", "0.5.6.post1"),
        ("vllm/vllm-openai:v0.11.2", "0.11.2"),
        ("nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.7.0.post2", "0.7.0.post2"),
        ("nvcr.io#nvidia/tensorrt-llm/release:1.2.0rc2", "1.2.0rc2"),
        ("rocm/sgl-dev:sglang-0.5.6.post1-rocm700-mi35x-mori-1224", "0.5.6.post1"),
        (f"localhost:5000/engine:1.2@{DIGEST}", "1.2"),
        ("nvcr.io/nvidia/tritonserver:25.08-trtllm-python-py3", None),  # the container's month, not trtllm's release
        ("localhost:5000/engine", None),
        ("rocm/vllm:nightly", None),
        (f"vllm/vllm-openai@{DIGEST}", None),
    ],
)
def test_the_release_an_image_tag_names(image: str, version: str | None) -> None:
    assert image_tag_version(image) == version


def test_pinned_container_image_passes() -> None:
    parse_recipe(data_of(engine={**SIMULATED_RECIPE["engine"], **CONTAINER}), "recipe.yaml")


def test_accuracy_gate_may_be_off_with_a_reason_or_for_dummy_weights() -> None:
    off = {"methodology": {"accuracy_gate": {"enabled": False, "reason": "base model without a chat template"}}}
    parse_recipe(real_weights(off), "recipe.yaml")
    parse_recipe(data_of({"methodology": {"accuracy_gate": {"enabled": False}}}), "recipe.yaml")
    dummy = {"engine": {"extra_args": ["--load-format", "dummy"]}, "methodology": {"accuracy_gate": {"enabled": False}}}
    parse_recipe(real_weights(dummy), "recipe.yaml")


def test_accuracy_question_file_relative_to_the_recipe(tmp_path: Path) -> None:
    questions = tmp_path / "questions.yaml"
    questions.write_text("questions:\n  - {prompt: 'What is 2 + 2? Answer with the number only.', answers: ['4']}\n")
    recipe_path = str(tmp_path / "recipe.yaml")
    loaded = parse_recipe(data_of({"methodology": {"accuracy_gate": {"prompts": "questions.yaml"}}}), recipe_path)
    assert loaded.recipe.methodology.accuracy_gate.prompts == str(questions)

    questions.write_text("questions:\n  - {prompt: 'What is 2 + 2?'}\n")
    message = message_of(data_of({"methodology": {"accuracy_gate": {"prompts": "questions.yaml"}}}), recipe_path)
    assert message == one_problem(
        f"field 'methodology.accuracy_gate.prompts': got '{questions}'; a YAML question file (questions: "
        "[{prompt, answers}, ...]): questions[0].answers: missing (required)",
        recipe_path,
    )

    missing = message_of(data_of({"methodology": {"accuracy_gate": {"prompts": "nope.yaml"}}}), recipe_path)
    assert missing == one_problem(
        f"field 'methodology.accuracy_gate.prompts': got '{tmp_path / 'nope.yaml'}'; a built-in question set "
        "(basic) or an existing YAML question file",
        recipe_path,
    )


def test_several_broken_rules_are_reported_together() -> None:
    data = agentic({"hardware": "h100", "parallelism": {"dp": 2, "ep": 4}})
    data["methodology"] = {"speculative_decoding": {"method": "eagle", "num_speculative_tokens": 3}}
    message = message_of(data)
    lines = message.splitlines()[1:]
    assert [line.split("'")[1] for line in lines] == [
        "methodology.routing.kind",
        "methodology.speculative_decoding.golden_acceptance_length",
        "parallelism.ep",
    ]


def test_default_accuracy_gate_keeps_fingerprints() -> None:
    default = parse_recipe(data_of(), "recipe.yaml")
    assert "accuracy_gate" not in default.recipe.model_dump()["methodology"]
    explicit = parse_recipe(data_of({"methodology": {"accuracy_gate": {"enabled": True}}}), "recipe.yaml")
    assert explicit.fingerprint == default.fingerprint
    stricter = parse_recipe(data_of({"methodology": {"accuracy_gate": {"min_accuracy": 0.9}}}), "recipe.yaml")
    assert stricter.fingerprint != default.fingerprint
    assert stricter.recipe.model_dump()["methodology"]["accuracy_gate"]["min_accuracy"] == 0.9


def test_shipped_recipes_follow_every_rule() -> None:
    assert load_recipes([ROOT / "recipes"])


def test_methodology_doc_lists_every_rule_in_sync() -> None:
    document = (ROOT / "docs/METHODOLOGY.md").read_text(encoding="utf-8")
    assert replace_rules_section(document) == document, "run: python -m recipes.rules --write docs/METHODOLOGY.md"
    generated = rules_markdown()
    for name, registered in RULES.items():
        assert f"#### `{name}`" in generated
        assert registered.doc.splitlines()[0] in document
        for message in registered.messages:
            assert message.display in document


def test_per_concurrency_settings_are_checked_where_they_are_written(write_recipe) -> None:
    from recipes.errors import RecipeError
    from recipes.loader import load_recipe

    def refused(per_concurrency: dict) -> str:
        path = write_recipe({"engine": {"per_concurrency": per_concurrency}, "workload": {"concurrency": [1, 4]}})
        with pytest.raises(RecipeError) as caught:
            load_recipe(path)
        return str(caught.value)

    assert "engine.per_concurrency.4: got max_model_len; expected typed tuning fields only" in refused(
        {4: {"max_model_len": 8192}}
    )
    assert "engine.per_concurrency.4: cuda_graph_max_batch_size" in refused({4: {"cuda_graph_max_batch_size": 0}})
