"""An engine is ready when its server says so: the readiness probe against a real HTTP server on loopback
(the model listed, every disaggregated worker registered). Moved from the unit tier: it opens sockets."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from recipes.errors import InfrastructureError
from runners.host.process import EngineProcess


@pytest.fixture
def models_server() -> Iterator[tuple[int, list[str]]]:
    """A loopback server answering /v1/models with the ids in the yielded list (mutable) and /health 200."""
    listed: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            models = json.dumps({"object": "list", "data": [{"id": name} for name in listed]}).encode()
            # Dynamo's frontend lists registered worker instances on /health; "worker:<component>" entries here.
            workers = [name.split(":", 1)[1] for name in listed if name.startswith("worker:")]
            instances = [{"component": component, "endpoint": "generate"} for component in workers]
            health = json.dumps({"status": "healthy", "instances": instances}).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(models if self.path == "/v1/models" else health)

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], listed
    server.shutdown()


def test_ready_model_waits_until_the_model_is_listed(models_server: tuple[int, list[str]], tmp_path: Path) -> None:
    port, listed = models_server
    engine = EngineProcess(["true"], {}, port, tmp_path / "log", "run", health_path="/v1/models", ready_model="m")
    with pytest.raises(InfrastructureError, match="not healthy"):
        engine.wait_healthy(timeout_s=0.3, poll_s=0.05)  # 200, but the model is not listed yet
    listed.append("m")
    assert engine.wait_healthy(timeout_s=2, poll_s=0.05) < 2
    plain = EngineProcess(["true"], {}, port, tmp_path / "log", "run2")  # default: /health answering 200 is enough
    assert plain.wait_healthy(timeout_s=2, poll_s=0.05) < 2


def test_ready_workers_waits_until_every_worker_is_registered(
    models_server: tuple[int, list[str]], tmp_path: Path
) -> None:
    port, listed = models_server
    listed += ["m", "worker:backend"]  # the model is listed once the decode worker registered
    engine = EngineProcess(["true"], {}, port, tmp_path / "log", "run", health_path="/v1/models", ready_model="m",
                           ready_workers=2)  # fmt: skip
    with pytest.raises(InfrastructureError, match="not healthy"):
        engine.wait_healthy(timeout_s=0.3, poll_s=0.05)  # the prefill worker has not registered yet
    listed.append("worker:prefill")
    assert engine.wait_healthy(timeout_s=2, poll_s=0.05) < 2
