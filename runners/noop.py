"""The `noop` runner kind: launches nothing and measures nothing.

It exists to measure the orchestrator itself (`benchmarks/dispatch_overhead.py`): a job goes through
the same queue, placement, events and state writes as a real one, with no engine behind it.
"""

from __future__ import annotations

from collections.abc import Iterator

from runners.job import JobEvent, JobSpec, Runner, register_runner


@register_runner
class NoopRunner(Runner):
    kind = "noop"

    def execute(self, job: JobSpec) -> Iterator[JobEvent]:
        # Placement was reported by the dispatcher already: one event is all a no-op job has to say.
        yield JobEvent(kind="job_finished", job_id=job.job_id)
