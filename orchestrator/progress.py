"""The sweep's live display (rich): one row per job for small sweeps, one summary row for large ones.

Adding a row redraws the display at once, which costs more than a no-op job itself; a thousand-job
sweep is better served by counts (`infersweep status SWEEP --watch` shows every job)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

# Up to this many jobs every job has its row; beyond it the summary row counts them.
ROWS_FOR_EVERY_JOB = 20


class SweepProgress:
    def __init__(self, console: Console, total_jobs: int) -> None:
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console,
        )  # fmt: skip
        self.every_job = total_jobs <= ROWS_FOR_EVERY_JOB
        self.rows: dict[str, TaskID] = {}  # job id -> row
        self.points: dict[str, int] = {}  # job id -> points planned
        self.counts = {"queued": 0, "running": 0, "done": 0, "failed": 0}
        self.summary = None if self.every_job else self.progress.add_task("", total=total_jobs)
        self._describe_summary()

    def __enter__(self) -> SweepProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)  # type: ignore[arg-type]  # our __exit__ takes the exception triple untyped

    def _describe_summary(self) -> None:
        if self.summary is not None:
            counts = ", ".join(f"{count} {name}" for name, count in self.counts.items())
            self.progress.update(self.summary, description=f"jobs: {counts}")

    def queued(self, job_id: str, label: str, points: int) -> None:
        self.points[job_id] = points
        self.counts["queued"] += 1
        if self.every_job:
            self.rows[job_id] = self.progress.add_task(f"{label}: queued", total=points)
        self._describe_summary()

    def submitted(self, job_id: str, label: str) -> None:
        self.counts["queued"] -= 1
        self.counts["running"] += 1
        self.describe(job_id, f"{label}: submitted")
        self._describe_summary()

    def describe(self, job_id: str, text: str) -> None:
        if job_id in self.rows:
            self.progress.update(self.rows[job_id], description=text)

    def advance(self, job_id: str) -> None:
        if job_id in self.rows:
            self.progress.advance(self.rows[job_id])

    def ended(self, job_id: str, text: str, *, ok: bool, ran: bool = True) -> None:
        self.counts["running" if ran else "queued"] -= 1
        self.counts["done" if ok else "failed"] += 1
        if self.summary is not None:
            self.progress.advance(self.summary)
        self.describe(job_id, text)
        self._describe_summary()
