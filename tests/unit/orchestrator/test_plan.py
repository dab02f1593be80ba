"""Matrix expansion and Point identity."""

from __future__ import annotations

from orchestrator.plan import expand_points, plan_jobs
from recipes.loader import load_recipe


def test_points_cover_sequences_concurrency_and_repeats(write_recipe) -> None:
    loaded = load_recipe(
        write_recipe(
            {
                "repeats": 2,
                "workload": {"sequences": [{"isl": 256, "osl": 32}, {"isl": 128, "osl": 64}], "concurrency": [4, 1]},
            }
        )
    )
    points = expand_points(loaded)
    assert len(points) == 2 * 2 * 2
    first = points[0]
    assert (first.workload.isl, first.workload.concurrency, first.repeat_index) == (256, 1, 0)
    assert first.workload.num_prompts == 10 and first.workload.num_warmup == 2
    by_concurrency = {p.workload.concurrency: p.workload for p in points if p.repeat_index == 0}
    assert by_concurrency[4].num_prompts == 40 and by_concurrency[4].num_warmup == 8
    # Repeats draw different prompts; keys are unique and stable.
    repeats = [p for p in points if p.workload.isl == 256 and p.workload.concurrency == 1]
    assert repeats[0].workload.seed != repeats[1].workload.seed
    assert len({p.point_key for p in points}) == len(points)
    assert [p.point_key for p in expand_points(load_recipe(loaded.path))] == [p.point_key for p in points]


def test_point_keys_change_with_the_recipe(write_recipe) -> None:
    base = expand_points(load_recipe(write_recipe(name="a.yaml")))
    other = expand_points(load_recipe(write_recipe({"engine": {"simulated": {"itl_ms": 3.0}}}, name="b.yaml")))
    assert {p.point_key for p in base}.isdisjoint({p.point_key for p in other})


def test_one_job_per_recipe(write_recipe) -> None:
    jobs = plan_jobs(
        [load_recipe(write_recipe(name="a.yaml")), load_recipe(write_recipe({"name": "other"}, name="b.yaml"))]
    )
    assert [job.recipe.name for job in jobs] == ["sim-test", "other"]
    assert all(len(job.points) == 2 for job in jobs)


def test_a_load_level_with_settings_of_its_own_gets_a_launch_of_its_own(write_recipe) -> None:
    # As InferenceX launches one server per concurrency (--cuda-graph-max-bs $CONC): levels 4 and 8 each run on an
    # engine launched with their own settings, levels 1 and 2 share one launch with the recipe's. One configuration:
    # every job keeps the recipe's fingerprint, and the Points are those of the recipe, each once.
    loaded = load_recipe(write_recipe({
        "engine": {"max_num_seqs": 64, "per_concurrency": {4: {"cuda_graph_max_batch_size": 4},
                                                           8: {"cuda_graph_max_batch_size": 8, "max_num_seqs": 8}}},
        "workload": {"concurrency": [1, 2, 4, 8]},
    }))  # fmt: skip
    jobs = plan_jobs([loaded])
    assert [[p.workload.concurrency for p in job.points] for job in jobs] == [[1, 2], [4], [8]]
    assert {job.recipe.fingerprint for job in jobs} == {loaded.fingerprint}
    engines = [job.recipe.recipe.engine for job in jobs]
    assert [(e.cuda_graph_max_batch_size, e.max_num_seqs) for e in engines] == [(None, 64), (4, 64), (8, 8)]
    assert engines[1].per_concurrency == {} and engines[2].per_concurrency == {}
    assert sorted(p.point_key for job in jobs for p in job.points) == sorted(p.point_key for p in expand_points(loaded))
