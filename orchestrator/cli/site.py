"""`infersweep site`: open the hub (`site/app.py`) on the results database, a read-only URL or a snapshot.

The hub only reads. Whatever it is pointed at, it connects read-only: SQLite through a `mode=ro` URI,
PostgreSQL with `default_transaction_read_only` on. Only the configured database (the one the
orchestrator writes: `INFERSWEEP_DATABASE_URL` or `~/.infersweep/infersweep.db`) is first brought to the
current schema, because a fresh checkout may never have run a sweep; a URL given with `--database-url`
(typically a read-only role) and a published snapshot are never migrated.

Streamlit runs headless on 127.0.0.1 with usage statistics off, so no request leaves the machine; `--public` (and
only it) lets the hub listen on another address, for a public deployment (docs/DEPLOY.md).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote, unquote, urlparse

import typer

from orchestrator.cli.output import console, errors, fail
from recipes.errors import ConfigurationError, InferSweepError, InfrastructureError

if TYPE_CHECKING:
    from orchestrator.artifacts import ArtifactStore

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "site" / "app.py"
SERVER = ROOT / "site" / "server.py"  # Streamlit's server for APP, plus the read-only API of a snapshot
DEFAULT_PORT = 8501
SQLITE_HEADER = b"SQLite format 3\x00"
SNAPSHOT_EXPECTED = (
    "expected a SQLite snapshot file written by `infersweep publish --snapshot`, an artifact store holding "
    "snapshot/latest.json (a directory, file:// or s3://BUCKET/PREFIX), an s3:// URI of one snapshot (.db), "
    "or 'latest' (the newest snapshot in the store named by INFERSWEEP_ARTIFACTS)"
)
URL_EXPECTED = "expected sqlite:///PATH or postgresql://USER@HOST[:PORT]/DATABASE"


@dataclass(frozen=True)
class HubDatabase:
    """What the hub connects with (always read-only) and how to describe it to the viewer."""

    url: str
    description: str
    api_dir: Path | None = None  # the read-only API's views of a published snapshot, served at /api/v1/


# ---------------------------------------------------------------------------------------------- databases


def _parse(url: str):
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigurationError(f"database URL {_shown(url)!r} cannot be parsed: {URL_EXPECTED}") from None
    if parsed.get_backend_name() not in {"sqlite", "postgresql"}:
        raise ConfigurationError(f"database URL {_shown(url)!r} is not supported: {URL_EXPECTED}")
    return parsed


def _shown(url: str) -> str:
    from db.session import shown_database_url  # db.session brings alembic: only when a URL is shown

    return shown_database_url(url)


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL (None for an in-memory database or another backend)."""
    parsed = _parse(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    database = parsed.database.removeprefix("file:") if parsed.query.get("uri") else parsed.database
    return Path(unquote(database.split("?", 1)[0])).expanduser().resolve()


def in_wal_mode(path: Path) -> bool:
    """Whether a SQLite file is in WAL mode (header bytes 18-19 are 2), without opening it."""
    with open(path, "rb") as handle:
        header = handle.read(20)
    return header.startswith(SQLITE_HEADER) and header[18:20] == b"\x02\x02"


def read_only_url(url: str, immutable: bool = False) -> str:
    """The same database, opened so that no statement can write to it.

    SQLite: `mode=ro`; `immutable=1` for a file nothing writes (a snapshot in rollback-journal mode,
    which `mode=ro` cannot open because the session turns WAL on). PostgreSQL: read-only transactions.
    """
    parsed = _parse(url)
    if parsed.get_backend_name() == "sqlite":
        path = sqlite_path(url)
        if path is None:
            raise ConfigurationError(f"database URL {url!r} is an in-memory SQLite database: nothing to read")
        return f"sqlite:///file:{quote(str(path))}?mode=ro{'&immutable=1' if immutable else ''}&uri=true"
    options = parsed.query.get("options", "")
    if "default_transaction_read_only" not in str(options):
        options = f"{options} -c default_transaction_read_only=on".strip()
    return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)


def _check_schema(url: str, what: str, upgrade_hint: str) -> None:
    """Fail unless `url` (called `what` in errors) answers and holds InferSweep's tables at head (or newer)."""
    from sqlalchemy import inspect
    from sqlalchemy.exc import SQLAlchemyError

    from db.session import current_revisions, make_engine, schema_revisions

    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("point_result"):
                raise ConfigurationError(
                    f"{what} has no InferSweep tables: expected a results database. {upgrade_hint}"
                )
            current = current_revisions(connection)
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise ConfigurationError(f"{what} cannot be read: {reason}") from None
    finally:
        engine.dispose()
    heads, known = schema_revisions()
    if current == heads:
        return
    shown, head = ", ".join(sorted(current)) or None, ", ".join(sorted(heads))
    if not current or current <= known:
        raise ConfigurationError(f"{what} is at schema revision {shown}, the hub needs {head}. {upgrade_hint}")
    # A revision this checkout does not know was written by newer code: the columns the hub reads exist.
    errors.print(f"note: {what} is at schema revision {shown}, newer than this checkout's {head}")


def configured_database() -> HubDatabase:
    """The orchestrator's own database, brought to the current schema (it may be brand new)."""
    from sqlalchemy.exc import SQLAlchemyError

    from db.session import default_database_url, make_engine, migrate

    url = default_database_url()
    _parse(url)
    path = sqlite_path(url)
    if path is not None and not path.parent.is_dir():
        raise ConfigurationError(f"INFERSWEEP_DATABASE_URL {url!r}: the folder {path.parent} does not exist")
    engine = make_engine(url)
    try:
        migrate(engine)
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).strip().splitlines()[0]
        raise ConfigurationError(
            f"database {_shown(url)!r} could not be brought to the current schema: {reason}. "
            "For a database this user may only read, use `infersweep site --database-url URL`."
        ) from None
    finally:
        engine.dispose()
    return HubDatabase(read_only_url(url), f"database {_shown(url)}")


def given_database(url: str) -> HubDatabase:
    """A database named on the command line: read as it is, never migrated."""
    _parse(url)
    path = sqlite_path(url)
    if path is not None:
        if not path.is_file():
            raise ConfigurationError(
                f"--database-url {url!r}: no SQLite file at {path} (expected an existing database)"
            )
        if not in_wal_mode(path):
            # The orchestrator keeps its SQLite database in WAL mode, so the hub can read while it writes.
            raise ConfigurationError(
                f"--database-url {url!r}: {path} is not in WAL mode, so it cannot be read while something writes "
                "it. Expected a database InferSweep wrote; for a file nothing writes, use --snapshot FILE"
            )
    hub_url = read_only_url(url)
    hint = "Upgrade it with a writable role: INFERSWEEP_DATABASE_URL=URL infersweep db upgrade."
    _check_schema(hub_url, f"--database-url {_shown(url)!r}", hint)
    return HubDatabase(hub_url, f"database {_shown(url)}, read-only")


# ---------------------------------------------------------------------------------------------- snapshots


def snapshot_cache() -> Path:
    from runners.host.paths import data_dir

    path = data_dir() / "snapshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _fetch(fetch: Callable[[Path], Path], source: str) -> Path:
    """Download a snapshot into the cache under its content hash (a running hub's file is never overwritten)."""
    from db.artifacts import sha256_of

    cache = snapshot_cache()
    with tempfile.TemporaryDirectory(dir=cache) as directory:
        partial = Path(directory) / "snapshot.db"
        try:
            fetch(partial)
        except (OSError, KeyError, json.JSONDecodeError) as error:
            raise ConfigurationError(
                f"--snapshot {source!r}: could not fetch it ({error}); {SNAPSHOT_EXPECTED}"
            ) from None
        except InfrastructureError as error:
            raise InfrastructureError(f"--snapshot {source!r}: {error}") from None
        target = cache / f"{sha256_of(partial)}.db"
        os.replace(partial, target)
    return target


def _latest_from(store: ArtifactStore, source: str) -> Path:
    from orchestrator.publish import fetch_latest_snapshot

    return _fetch(lambda target: fetch_latest_snapshot(store, target), source)


def snapshot_file(value: str) -> Path:
    """Resolve `--snapshot` to a local SQLite file (downloading it from the artifact store if needed)."""
    return snapshot_source(value)[0]


def snapshot_source(value: str) -> tuple[Path, ArtifactStore | None]:
    """`--snapshot` as a local SQLite file, and the artifact store it is the newest snapshot of (None: a file)."""
    from orchestrator.artifacts import LocalArtifactStore, S3ArtifactStore, store_from_environment
    from orchestrator.publish import LATEST_SNAPSHOT_KEY

    store: ArtifactStore
    if value == "latest":
        store = store_from_environment()
        return _latest_from(store, value), store
    scheme = urlparse(value).scheme
    if scheme == "s3":
        bucket, _, key = value.removeprefix("s3://").partition("/")
        if not bucket:
            raise ConfigurationError(f"--snapshot {value!r}: no bucket; {SNAPSHOT_EXPECTED}")
        store = S3ArtifactStore(bucket) if key.endswith(".db") else S3ArtifactStore(bucket, key)
        if key.endswith(".db"):
            return _fetch(lambda target: store.get(key, target), value), None
        return _latest_from(store, value), store
    if scheme == "file":
        path = Path(unquote(urlparse(value).path))
    elif scheme in {"", "sqlite"} or len(scheme) == 1:  # a plain path (a one-letter scheme is a Windows drive)
        path = Path(value.removeprefix("sqlite:///")).expanduser()
    else:
        raise ConfigurationError(f"--snapshot {value!r}: the scheme {scheme!r} is not supported; {SNAPSHOT_EXPECTED}")
    if path.is_dir():
        if not (path / LATEST_SNAPSHOT_KEY).is_file():
            raise ConfigurationError(
                f"--snapshot {value!r}: the folder {path} has no {LATEST_SNAPSHOT_KEY}; {SNAPSHOT_EXPECTED}"
            )
        store = LocalArtifactStore(path)
        return _latest_from(store, value), store
    if not path.is_file():
        raise ConfigurationError(f"--snapshot {value!r}: no file at {path.resolve()}; {SNAPSHOT_EXPECTED}")
    with open(path, "rb") as handle:
        if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise ConfigurationError(f"--snapshot {value!r}: {path} is not a SQLite file; {SNAPSHOT_EXPECTED}")
    return path.resolve(), None


def snapshot_database(value: str) -> HubDatabase:
    """A published snapshot: it replaces the configured database entirely, and is never migrated. The hub also serves
    the read-only API's views of it."""
    path, store = snapshot_source(value)
    hub_url = read_only_url(f"sqlite:///{path}", immutable=not in_wal_mode(path))
    _check_schema(hub_url, f"snapshot {path}", "Publish a new one with this version: infersweep publish --snapshot.")
    description = f"snapshot {path}" + ("" if str(path) == value else f" (from {value})")
    views = api_views(path, hub_url)
    if store is not None:
        _fetch_history(store, views)
    return HubDatabase(hub_url, description, views)


def _fetch_history(store: ArtifactStore, views: Path) -> None:
    """The chain's index and each earlier snapshot's views, from the store `publish --snapshot` wrote them to, beside
    the newest's: the hub's API answers `asof` reads from them (site/server.py). A store from before chains has
    none; a view an earlier snapshot did not have is left out."""
    from orchestrator.public_api import API_PREFIX
    from orchestrator.snapshot_chain import HISTORY_VIEW

    index = f"{API_PREFIX}/{HISTORY_VIEW}.json"
    if not store.exists(index):
        return
    history = store.get(index, views / f".{HISTORY_VIEW}.partial")
    names = [path.name for path in views.glob("*.json")]
    for entry in json.loads(history.read_text())["snapshots"]:
        folder = views / "asof" / str(entry["snapshot"])
        for name in names:
            if not (folder / name).is_file() and store.exists(f"{API_PREFIX}/asof/{entry['snapshot']}/{name}"):
                store.get(f"{API_PREFIX}/asof/{entry['snapshot']}/{name}", folder / name)
    os.replace(history, views / f"{HISTORY_VIEW}.json")


def api_views(snapshot: Path, url: str) -> Path:
    """The read-only API's views of `snapshot` (read through `url`), in a folder of the data directory named by the
    snapshot's hash: made once per snapshot, whole or not at all (`infersweep publish --snapshot` stores the same
    views in the artifact store)."""
    from db.artifacts import sha256_of
    from db.session import make_engine
    from orchestrator.public_api import build_views, write_views
    from runners.host.paths import data_dir

    digest = sha256_of(snapshot)
    folder = data_dir() / "api" / digest
    if (folder / "index.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    engine = make_engine(url)
    try:
        with tempfile.TemporaryDirectory(dir=folder.parent) as directory:
            write_views(build_views(engine, digest), Path(directory) / "views")
            os.replace(Path(directory) / "views", folder)
    finally:
        engine.dispose()
    return folder


# ---------------------------------------------------------------------------------------------- streamlit


def streamlit_argv(port: int, address: str, app: Path = SERVER, public: bool = False) -> list[str]:
    """`streamlit run site/app.py`, headless, bound to `address`, usage statistics off (also in .streamlit/).
    A public hub shows a reader no error's details (a traceback names the server's files and code): only that
    the page failed; the details go to the server's log."""
    return [
        sys.executable, "-m", "streamlit", "run", str(app),
        "--server.headless", "true",
        "--server.address", address,
        "--server.port", str(port),
        "--browser.gatherUsageStats", "false",
        "--browser.serverAddress", address,
        "--browser.serverPort", str(port),
        "--client.showErrorDetails", "none" if public else "full",
        # Streamlit collects all garbage after every run by default: over the hub's cached results that held the GIL
        # for ~0.1 s, in which the server could not send the run's last messages (half a filter change's time,
        # docs/BENCHMARKS.md "Hub render"). Python's own collector still runs as objects accumulate.
        "--runner.postScriptGC", "false",
    ]  # fmt: skip


def _check_port(address: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As Streamlit's server does: a hub stopped a moment ago leaves TIME_WAIT sockets, not a listener.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError as error:
            raise ConfigurationError(
                f"--port {port} --address {address!r}: cannot listen there ({error.strerror}); "
                "expected a free port on an address of this machine (another hub running? choose another --port)"
            ) from None


def _warm(base_url: str) -> None:
    """Open the busiest pages once so the first viewer finds the hub's caches full (`site_warmup`)."""
    from orchestrator.site_warmup import warm

    started = time.perf_counter()
    warmed = warm(base_url)
    if warmed.problem:
        errors.print(f"note: the hub was not warmed ({warmed.problem}); its first viewer waits for the first read")
        return
    pages = ", ".join(f"/{page} {seconds:.1f} s" for page, seconds in warmed.seconds.items() if seconds is not None)
    console.print(f"hub ready: pages opened once in advance ({pages}; {time.perf_counter() - started:.1f} s)")


LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def listen_address(address: str | None, public: bool) -> str:
    """Where the hub listens: loopback unless `public`; a non-loopback address needs `public`, so a hub never
    becomes reachable from other machines by a typo or a copied command."""
    if address is None:
        return "0.0.0.0" if public else "127.0.0.1"  # noqa: S104 (all interfaces only when asked with --public)
    if address not in LOOPBACK and not public:
        raise ConfigurationError(
            f"--address {address!r} is reachable from other machines; expected a loopback address "
            f"({', '.join(sorted(LOOPBACK))}), or add --public to serve the hub beyond this machine"
        )
    return address


SESSIONS_PER_CLIENT = 8  # a reader's tabs; as packaging/hub/nginx.conf's limit_conn


def run_hub(
    database: HubDatabase, port: int, address: str, public: bool = False, sessions_per_client: int = SESSIONS_PER_CLIENT
) -> int:
    """Run Streamlit until it exits or this process is asked to stop; return its exit code. `public`: served to
    other machines (error details hidden). `sessions_per_client`: open pages one address of another machine may
    hold at once (0: no limit)."""
    for needed in (APP, SERVER):
        if not needed.is_file():
            raise ConfigurationError(f"{needed} not found: `infersweep site` runs from a source checkout of InferSweep")
    _check_port(address, port)
    env = {**os.environ, "INFERSWEEP_DATABASE_URL": database.url, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    env.pop("INFERSWEEP_API_DIR", None)
    env["INFERSWEEP_HUB_SESSIONS_PER_CLIENT"] = str(sessions_per_client)
    if database.api_dir is not None:
        env["INFERSWEEP_API_DIR"] = str(database.api_dir)
    # The repository root is the working directory so Streamlit also reads its .streamlit/config.toml.
    hub = subprocess.Popen(streamlit_argv(port, address, public=public), cwd=ROOT, env=env)
    host = f"[{address}]" if ":" in address else address
    console.print(f"InferSweep hub: http://{host}:{port}  ({database.description})", highlight=False)
    if database.api_dir is not None:
        console.print(f"read-only API: http://{host}:{port}/api/v1/index.json (OpenAPI: /api/v1/openapi.json)",
                      highlight=False)  # fmt: skip
    threading.Thread(target=_warm, args=(f"http://{host}:{port}",), name="hub-warm-up", daemon=True).start()
    if address not in LOOPBACK:
        errors.print(f"note: listening on {address}: other machines can open the hub (it has no write path)")

    def stop(signum: int, _frame: object) -> None:
        hub.send_signal(signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        code = hub.wait()
    except KeyboardInterrupt:
        # Ctrl-C reached Streamlit too (same process group); give it time to close its sessions. Its server exits
        # with 1 ("Aborted!") on Ctrl-C: the reader stopped it, which is a clean stop whatever it returns.
        try:
            hub.wait(timeout=15)
        except subprocess.TimeoutExpired:
            hub.kill()
            hub.wait()
        code = 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    # Stopped by a signal we passed on (or Ctrl-C): a clean stop, not a failure.
    return 0 if code in {0, -signal.SIGTERM, -signal.SIGINT} else code


def site(
    database_url: Annotated[
        str | None,
        typer.Option(help="Read this database instead (e.g. a read-only PostgreSQL role); never migrated."),
    ] = None,
    snapshot: Annotated[
        str | None,
        typer.Option(
            help="Read a published snapshot: a .db file, an artifact store (directory, file:// or s3://BUCKET/PREFIX) "
            "whose snapshot/latest.json names it, or 'latest' (the store in INFERSWEEP_ARTIFACTS)."
        ),
    ] = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to serve the hub on.")] = DEFAULT_PORT,
    address: Annotated[
        str | None,
        typer.Option(help="Address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 with --public)."),
    ] = None,
    public: Annotated[
        bool, typer.Option(help="Serve other machines too: needed to listen on any address but loopback.")
    ] = False,
    sessions_per_client: Annotated[
        int,
        typer.Option(
            min=0,
            max=10_000,
            help="Pages one address of another machine may hold open at once; one more is refused, so no client can "
            "make the others wait (this machine's own clients, a proxy in front included, are not counted; 0: no "
            "limit).",
        ),
    ] = SESSIONS_PER_CLIENT,
) -> None:
    """Open the results hub in Streamlit (read-only) on the configured database, a URL or a snapshot."""
    try:
        address = listen_address(address, public)
        if database_url is not None and snapshot is not None:
            raise ConfigurationError("give --database-url or --snapshot, not both")
        if snapshot is not None:
            database = snapshot_database(snapshot)
        elif database_url is not None:
            database = given_database(database_url)
        else:
            database = configured_database()
        code = run_hub(database, port, address, public, sessions_per_client)
    except InferSweepError as error:
        fail(error)
    raise typer.Exit(code)
