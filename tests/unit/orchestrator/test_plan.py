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
