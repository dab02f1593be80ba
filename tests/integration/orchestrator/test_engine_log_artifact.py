"""An engine log is kept as the bytes it had when it was registered (orchestrator/recorder.py `store_file`), and a
full disk while staging stops the sweep naming it.

Before: the row named the live file in the job's folder. A Ray worker killed mid-job left its engine running, which
wrote on into that log after it was registered (empty), so every later `infersweep publish` reported that the file
"holds other bytes" and the log was never stored."""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path

import pytest

from db import recording
from db.session import make_engine, migrate, open_session
from orchestrator.artifacts import LocalArtifactStore
from orchestrator.recorder import Recorder
from orchestrator.uploads import publish_pending
from recipes.errors import InfrastructureError


class StoreDown:
    """An artifact store that is unreachable (uploads stay pending)."""

    def put(self, local_path: Path, key: str, overwrite: bool = False) -> str:
        raise InfrastructureError("the store is down")


def test_a_log_written_on_after_it_was_registered_is_published_as_registered(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'results.db'}")
    migrate(engine)
    log = tmp_path / "logs" / "job-1" / "engine-prefill-0.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"")  # the engine had written nothing yet when its worker died
    recorder = Recorder(engine, "logs", store=StoreDown())  # type: ignore[arg-type]
    artifact = recorder.store_file(log, "engine-log")
    recorder.close()
    assert artifact is not None and artifact.status == "pending"
    log.write_bytes(b"INFO the orphaned engine goes on logging\n")  # it outlived the worker

    stored, pending = publish_pending(engine, LocalArtifactStore(tmp_path / "store"))
    assert (stored, pending) == (1, 0)
    with open_session(engine) as session:
        assert recording.pending_artifacts(session) == []
    kept = (tmp_path / "store" / artifact.key).read_bytes()
    assert hashlib.sha256(kept).hexdigest() == artifact.sha256 == hashlib.sha256(b"").hexdigest()
    assert Path(artifact.local_path).name == "engine-prefill-0.log"  # which process's log it is, still said
    assert log.read_bytes().startswith(b"INFO")  # the engine's own file is not ours to remove


def test_a_full_disk_while_staging_stops_the_sweep_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'results.db'}")
    migrate(engine)
    log = tmp_path / "engine.log"
    log.write_text("x")
    recorder = Recorder(engine, "full", store=LocalArtifactStore(tmp_path / "store"))

    def disk_full(_source: Path, _target: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("orchestrator.recorder.shutil.copyfile", disk_full)
    with pytest.raises(InfrastructureError, match=r"the disk is full: the engine-log of .* could not be staged"):
        recorder.store_file(log, "engine-log")
    recorder.close()
