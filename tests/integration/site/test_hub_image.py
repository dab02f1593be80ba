"""The public hub image (packaging/hub/Dockerfile), built here and run on a published snapshot.

No registry serves base images to this machine, so the base is made here: Debian bookworm with Python 3.11 from
Debian's own packages (`debootstrap`), imported into the test daemon once (`BASE_IMAGE`). The project's
dependencies are taken as wheels from this venv's pip (its cache holds them after `make setup`) and installed in
the image with `--no-index`, as the Dockerfile allows. Everything else is the Dockerfile a deployer builds.

The snapshot is the real InferenceX sample (tests/data/inferencex) imported and published with the CLI into a
folder store, mounted read-only; the container serves it on its own network namespace, published on a loopback
port, and headless Chromium loads the Overview from there.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from orchestrator.site_warmup import wait_until_healthy
from runners.host.process import pick_free_port
from tests.conftest import ROOT, run_cli
from tests.integration.public_api_contract import FILES, check_views, envelope, strict_json
from tests.integration.services import ensure_package

pytestmark = pytest.mark.system  # Docker builds and runs the hub image

DEBOOTSTRAP = Path("/usr/sbin/debootstrap")
BASE_IMAGE = "infersweep-test/bookworm-python:1"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
CONTEXT_IGNORE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".pytest_cache", ".ruff_cache",
                                        "*.egg-info", "tests", "benchmarks", "*.whl")  # fmt: skip
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HUB_LOCK = ROOT / "packaging" / "hub" / "requirements.lock"
CHEAPEST_CELL = {"tco_tier": "owning_hyperscaler", "model": "deepseek-r1", "precision": "fp4", "workload": "1k/1k",
                 "interactivity": 50.0}  # fmt: skip


def docker(*args: str, timeout: float = 600, check: bool = True, **kwargs: object) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False,
                               **kwargs)  # type: ignore[call-overload]  # fmt: skip
    if check:
        assert completed.returncode == 0, (
            f"docker {' '.join(args[:3])}...: {completed.stdout[-3000:]}" + (completed.stderr[-3000:])
        )
    return completed


def _base_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Debian bookworm with python3 and python3-venv, made with debootstrap and imported once per daemon."""
    if docker("image", "inspect", BASE_IMAGE, check=False).returncode == 0:
        return BASE_IMAGE
    ensure_package("debootstrap", DEBOOTSTRAP, "the hub image test (its base image)")
    rootfs = tmp_path_factory.mktemp("bookworm") / "rootfs"
    made = subprocess.run(
        [str(DEBOOTSTRAP), "--variant=minbase", "--include=python3,python3-venv,ca-certificates", "bookworm",
         str(rootfs), DEBIAN_MIRROR],
        capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(["docker", "import", "-", BASE_IMAGE], stdin=tar.stdout, capture_output=True,
                              timeout=600, check=False)  # fmt: skip
    tar.wait()
    assert imported.returncode == 0, imported.stderr.decode(errors="replace")
    shutil.rmtree(rootfs, ignore_errors=True)
    return BASE_IMAGE


@pytest.fixture(scope="module")
def hub_image(docker_daemon: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Dockerfile built on the bookworm base, from a copy of the checkout with the wheels beside it."""
    base = _base_image(tmp_path_factory)
    context = tmp_path_factory.mktemp("hub-image") / "context"
    shutil.copytree(ROOT, context, ignore=CONTEXT_IGNORE)
    wheels = context / "packaging" / "hub" / "wheels"
    # The hub lock's wheels, checked against its hashes (pip's cache holds them after `make setup`), and what building
    # the project needs; the image installs them again with --require-hashes.
    for wanted in (["--require-hashes", "-r", str(HUB_LOCK)], ["setuptools>=77", "wheel"]):
        built = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), *wanted],
            capture_output=True, text=True, timeout=1200, check=False,
        )  # fmt: skip
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    digest = hashlib.sha256((context / "packaging" / "hub" / "Dockerfile").read_bytes()).hexdigest()[:12]
    tag = f"infersweep-test/hub:{digest}"
    docker(
        "build", "--file", str(context / "packaging" / "hub" / "Dockerfile"), "--tag", tag,
        "--build-arg", f"BASE={base}", "--build-arg", "PIP_OPTIONS=--no-index --find-links /src/.wheels",
        str(context), timeout=1800,
    )  # fmt: skip
    shutil.rmtree(context, ignore_errors=True)
    try:
        yield tag
    finally:
        docker("image", "rm", "--force", tag, check=False)


@pytest.fixture(scope="module")
def snapshot_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder artifact store holding a published snapshot of the real InferenceX sample."""
    home = tmp_path_factory.mktemp("publish")
    store = home / "store"
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{home / 'results.db'}", "INFERSWEEP_ARTIFACTS": str(store)}
    files = sorted(str(path) for path in (ROOT / "tests" / "data" / "inferencex").glob("run_*/agg_bmk.json"))
    for argv in (["import", "inferencex", *files], ["publish", "--snapshot"]):
        completed = run_cli(*argv, env=env)
        assert completed.returncode == 0, completed.stdout + completed.stderr
    # The container's user (uid 10001) reads the mount: world-readable, as a deployer's store would be.
    for path in [store, *store.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return store


@pytest.fixture(scope="module")
def served(hub_image: str, snapshot_store: Path) -> Iterator[tuple[str, str]]:
    """The image run as documented (docs/DEPLOY.md), the store mounted read-only; yields (container, base URL)."""
    port = pick_free_port()
    name = f"infersweep-hub-test-{os.getpid()}"
    docker("run", "--detach", "--name", name, "--publish", f"127.0.0.1:{port}:8501",
           "--volume", f"{snapshot_store}:/srv/snapshot:ro", hub_image)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(base, timeout_s=120):
            logs = docker("logs", name, check=False)
            pytest.fail(f"the hub container did not answer within 120 s: {logs.stdout}{logs.stderr}")
        yield name, base
    finally:
        docker("rm", "--force", name, check=False)


def test_the_image_serves_the_snapshot_and_chromium_loads_the_overview(served: tuple[str, str], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    name, base = served
    logs = docker("logs", name).stdout
    assert "0.0.0.0:8501" in logs and "snapshot" in logs, logs
    assert CHROMIUM is not None, "make test installs Debian's chromium"
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                                         "--disable-background-networking", "--disable-dev-shm-usage"])  # fmt: skip
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.goto(base, timeout=120_000)
        page.locator("h1").filter(has_text="Overview").first.wait_for(timeout=120_000)
        page.get_by_text("cheapest:").first.wait_for(timeout=120_000)  # the scorecard's cards
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(timeout=120_000)
        page.locator('[data-testid="stSkeleton"]').first.wait_for(state="detached", timeout=120_000)
        # The cards are text: each chip's figure as a reader sees it.
        cells = page.inner_text('[data-testid="stMain"]')
        body = page.inner_text("body")
        shots = Path(os.environ.get("INFERSWEEP_TEST_ARTIFACTS") or tmp_path) / "hub-image"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "overview.png"), full_page=True)
        browser.close()
    assert "Traceback" not in body and "No results yet" not in body, body[:2000]
    # The sample's DeepSeek-R1 FP4 1k/1k row: B200 is the cheapest at 50 tok/s/user (tests/site/test_overview_real_rows)
    assert "b200 $0.905" in cells, cells[:3000]  # $0.9045, to three significant figures
    # The same figure in the read-only API the container serves beside the page.
    documents = {"envelopes.json": strict_json(_fetch(f"{base}/api/v1/envelopes.json")[0], "envelopes.json")}
    b200 = envelope(documents, **CHEAPEST_CELL, hardware="b200")
    assert f"b200 ${b200['usd_per_million_output']:.3g}" in cells


def _fetch(url: str) -> tuple[bytes, str]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read(), response.headers.get("Content-Type", "")


def test_the_image_serves_the_read_only_api_of_its_snapshot(served: tuple[str, str], snapshot_store: Path) -> None:
    """Every view at /api/v1/, as JSON, byte for byte what `publish --snapshot` stored beside the snapshot (both are
    read from the snapshot itself), valid against the OpenAPI description it serves."""
    _, base = served
    documents = {}
    for name in FILES:
        body, content_type = _fetch(f"{base}/api/v1/{name}")
        assert content_type.startswith("application/json"), (name, content_type)
        assert body == (snapshot_store / "api" / "v1" / name).read_bytes(), name
        documents[name] = strict_json(body, f"hub image {name}")
    check_views(documents, "hub image")


def test_the_hub_in_the_image_cannot_write_its_database(served: tuple[str, str]) -> None:
    name, _ = served
    # The same connection the hub opens (orchestrator.cli.site.snapshot_database), inside the running container.
    attempt = (
        "from sqlalchemy import text\n"
        "from sqlalchemy.exc import OperationalError\n"
        "from db.session import make_engine\n"
        "from orchestrator.cli.site import snapshot_database\n"
        "engine = make_engine(snapshot_database('/srv/snapshot').url)\n"
        "try:\n"
        "    with engine.begin() as connection:\n"
        "        connection.execute(text(\"UPDATE sweep SET name = 'written'\"))\n"
        "except OperationalError as error:\n"
        "    print('refused:', error.orig)\n"
        "else:\n"
        "    print('WRITTEN')\n"
    )
    completed = docker("exec", name, "python", "-c", attempt)
    assert "refused:" in completed.stdout and "readonly" in completed.stdout, completed.stdout + completed.stderr


def test_the_image_holds_exactly_the_hub_lock_and_nothing_only_sweeps_need(hub_image: str) -> None:
    """Issue 46: the hub image installed every dependency of the project, Ray and paramiko included, from unpinned
    ranges. Now its packages are the hub lock's, at its versions (installed with --require-hashes), and the project."""
    # pip and setuptools are the venv's own tools (ensurepip), not dependencies.
    listing = ["list", "--format", "freeze", "--exclude", "pip", "--exclude", "setuptools"]
    listed = docker("run", "--rm", "--entrypoint", "pip", hub_image, *listing)
    installed = {canonicalize_name(line.split("==")[0]): line.split("==")[1]
                 for line in listed.stdout.splitlines() if "==" in line}  # fmt: skip
    installed.pop("infersweep", None)
    # pip list shows the editable project as `infersweep==0.1.0`; what is left must be the lock, exactly.
    pinned = dict(re.findall(r"^([a-z0-9._-]+)==(\S+) \\$", HUB_LOCK.read_text(), flags=re.MULTILINE))
    assert installed == {canonicalize_name(name): version for name, version in pinned.items()}
    for absent in ("ray", "paramiko", "aiohttp", "tokenizers"):
        tried = docker("run", "--rm", "--entrypoint", "python", hub_image, "-c", f"import {absent}", check=False)
        assert tried.returncode != 0 and "ModuleNotFoundError" in tried.stderr, (absent, tried.stderr[-500:])


def test_the_image_needs_public_to_listen_beyond_loopback(hub_image: str) -> None:
    refused = docker("run", "--rm", "--entrypoint", "infersweep", hub_image, "site", "--address", "0.0.0.0",
                     check=False)  # fmt: skip
    assert refused.returncode != 0
    assert "--public" in refused.stdout + refused.stderr and "Traceback" not in refused.stdout + refused.stderr
