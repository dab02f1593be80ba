"""Signed result bundles: a simulated sweep bundled and verified offline; every tampering refused with its reason."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from orchestrator.bundles import ENVELOPE, new_key, sign
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(a verified bundle of a simulated sweep, its signer's private key, the trusted-keys file naming it)."""
    import yaml

    from tests.conftest import SIMULATED_RECIPE

    folder = tmp_path_factory.mktemp("bundle")
    recipe = folder / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(SIMULATED_RECIPE, sort_keys=False))
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{folder / 'results.db'}"}
    assert run_cli("run", str(recipe), "--sweep", "to-bundle", env=env).returncode == 0
    key = folder / "signer.pem"
    keygen = run_cli("bundle", "keygen", "--owner", "ci-runner", "--private-key", str(key))
    assert keygen.returncode == 0 and "owner: ci-runner" in keygen.stdout, keygen.stderr
    trusted = folder / "trusted.yaml"
    trusted.write_text("keys:\n" + keygen.stdout[keygen.stdout.index("  - owner") :])
    made = run_cli("bundle", "make", "to-bundle", "--key", str(key), "--out", str(folder / "bundle"),
                   "--keys", str(trusted), env=env)  # fmt: skip
    assert made.returncode == 0, made.stderr
    return folder / "bundle", key, trusted


def _verify(bundle: Path, trusted: Path) -> tuple[int, str]:
    result = run_cli("verify", str(bundle), "--keys", str(trusted))
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, " ".join((result.stdout + result.stderr).split())


def _copy(bundle: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(bundle, tmp_path / "copy"))


def _statement(bundle: Path) -> dict:
    return json.loads(base64.b64decode(json.loads((bundle / ENVELOPE).read_text())["payload"]))


def _edit_envelope(bundle: Path, change) -> None:  # type: ignore[no-untyped-def]
    """The envelope as `change(envelope)` leaves it, written back without signing again."""
    envelope = json.loads((bundle / ENVELOPE).read_text())
    change(envelope)
    (bundle / ENVELOPE).write_text(json.dumps(envelope))


def _rehash(statement: dict, bundle: Path, name: str) -> None:
    """The statement's digest of file `name` set to the file's bytes as they are now."""
    for subject in statement["subject"]:
        if subject["name"] == name:
            subject["digest"]["sha256"] = hashlib.sha256((bundle / name).read_bytes()).hexdigest()


def _resign(bundle: Path, statement: dict, key: Path) -> None:
    private = load_pem_private_key(key.read_bytes(), password=None)
    (bundle / ENVELOPE).write_text(json.dumps(sign(statement, private)))  # type: ignore[arg-type]


def _longer_ttft(bundle: Path) -> tuple[str, Path]:
    """One measured request sent 5 ms earlier in the first Point's records (its TTFT 5 ms longer); (its point key,
    the file)."""
    records = bundle / "points" / "0" / "records.parquet"
    frame = pd.read_parquet(records)
    row = frame.index[~frame["warmup"]][0]
    frame.loc[row, "sent"] = frame.loc[row, "sent"] - 0.005
    frame.to_parquet(records, index=False)
    return json.loads((bundle / "points" / "0" / "result.json").read_text())["point_key"], records


def test_a_bundle_of_a_simulated_sweep_verifies(signed: tuple[Path, Path, Path]) -> None:
    bundle, _, trusted = signed
    code, said = _verify(bundle, trusted)
    assert code == 0, said
    assert (
        "verified: signed by ci-runner" in said and "recomputed from their records with every figure the same" in said
    )
    statement = _statement(bundle)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    client = statement["predicate"]["client"]
    assert client["name"] == "infersweep-loadgen" and len(client["code_sha256"]) == 64


def test_changed_records_are_refused_by_their_hash(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, _, trusted = signed
    copy = _copy(bundle, tmp_path)
    _longer_ttft(copy)
    code, said = _verify(copy, trusted)
    assert (
        code == 1 and "not verified: points/0/records.parquet: sha256 " in said and "the signed statement says" in said
    )


def test_changed_records_signed_again_are_refused_by_the_figures_they_give(
    signed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A signer who changes a record and signs again: hashes and signature hold, the figures do not."""
    bundle, key, trusted = signed
    copy = _copy(bundle, tmp_path)
    point_key, _ = _longer_ttft(copy)
    statement = _statement(copy)
    _rehash(statement, copy, "points/0/records.parquet")
    _resign(copy, statement, key)
    code, said = _verify(copy, trusted)
    assert code == 1 and f"differs: point {point_key}: ttft_ms.mean stored" in said and "recomputed" in said


def test_one_byte_of_the_manifest_changed_breaks_the_signature(signed: tuple[Path, Path, Path], tmp_path: Path) -> None:
    bundle, _, trusted = signed
    copy = _copy(bundle, tmp_path)

    def one_byte(envelope: dict) -> None:
        body = bytearray(base64.b64decode(envelope["payload"]))
        body[body.index(b'"sweep":"to-bundle"') + len('"sweep":"to-b')] = ord("B")
        envelope["payload"] = base64.b64encode(bytes(body)).decode()

    _edit_envelope(copy, one_byte)
    code, said = _verify(copy, trusted)
    assert code == 1 and "the signature does not hold for ci-runner's key" in said


def test_a_swapped_recipe_is_refused_by_its_hash_and_signed_again_by_its_fingerprint(
    signed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    bundle, key, trusted = signed
    copy = _copy(bundle, tmp_path)
    [recipe] = (copy / "recipes").glob("*.json")
    other = json.loads(recipe.read_text())
    other["engine"]["max_model_len"] = other["engine"].get("max_model_len", 2048) + 1  # another configuration
    recipe.write_text(json.dumps(other))
    code, said = _verify(copy, trusted)
    assert code == 1 and f"not verified: recipes/{recipe.name}: sha256 " in said
    statement = _statement(copy)
    _rehash(statement, copy, f"recipes/{recipe.name}")
    _resign(copy, statement, key)
    code, said = _verify(copy, trusted)
    assert code == 1 and f"not verified: recipes/{recipe.name}: its fingerprint is " in said


def test_a_key_not_in_the_list_and_another_key_under_a_listed_id_are_refused(
    signed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    bundle, _, trusted = signed
    stranger = tmp_path / "stranger.pem"
    new_key(stranger)
    copy = _copy(bundle, tmp_path)
    _resign(copy, _statement(copy), stranger)
    code, said = _verify(copy, trusted)
    assert code == 1 and "which is not in the trusted keys" in said
    # The stranger's signature under the listed key's id: the id is found, the signature does not hold for it.
    listed_id = json.loads((bundle / ENVELOPE).read_text())["signatures"][0]["keyid"]
    _edit_envelope(copy, lambda envelope: envelope["signatures"][0].update(keyid=listed_id))
    code, said = _verify(copy, trusted)
    assert code == 1 and "the signature does not hold for ci-runner's key" in said


def test_a_file_read_to_verify_must_be_hashed_by_the_signed_statement(
    signed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A statement signed by a trusted key that leaves a Point's records out of its subjects: those records could be
    any bytes, so verify refuses to read them rather than recompute from them."""
    bundle, key, trusted = signed
    copy = _copy(bundle, tmp_path)
    statement = _statement(copy)
    statement["subject"] = [
        subject for subject in statement["subject"] if subject["name"] != "points/0/records.parquet"
    ]
    _resign(copy, statement, key)
    code, said = _verify(copy, trusted)
    assert (
        code == 1 and "points/0/records.parquet: read to verify, but the signed statement names no hash for it" in said
    )


def test_a_bundle_of_imported_results_verifies_by_hash_and_recomputes_nothing(
    signed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Imported rows carry no request records: their bundle verifies signer and hashes, and says none was
    recomputed (another tool's configuration has no fingerprint of ours to check)."""
    from tests.conftest import ROOT

    _, key, trusted = signed
    env = {"INFERSWEEP_DATABASE_URL": f"sqlite:///{tmp_path / 'imported.db'}"}
    rows = ROOT / "tests" / "data" / "inferencex" / "run_20316427102" / "agg_bmk.json"
    assert run_cli("import", "inferencex", str(rows), env=env).returncode == 0
    made = run_cli("bundle", "make", "inferencex-run-20316427102", "--key", str(key), "--out", str(tmp_path / "b"),
                   env=env)  # fmt: skip
    assert made.returncode == 0, made.stderr
    code, said = _verify(tmp_path / "b", trusted)
    assert code == 0 and "11 Point(s), 0 recomputed" in said and "11 without records (imported" in said, said


def test_the_run_detail_reads_signed_then_verified_and_the_public_snapshot_carries_it(
    signed: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`bundle make` recorded each Point as signed; `verify --record` as verified; the hub's run detail says which, on
    the results database and on the public snapshot."""
    from tests.site.conftest import open_page

    bundle, _, trusted = signed
    url = f"sqlite:///{bundle.parent / 'results.db'}"
    point_key = _statement(bundle)["predicate"]["points"][0]["point_key"]

    def shown(database: str) -> str:
        monkeypatch.setenv("INFERSWEEP_DATABASE_URL", database)
        app = open_page("run_detail", {"sweep": "to-bundle", "point": point_key}, from_overview=True)
        return "\n".join(str(element.value) for kind in ("success", "info", "warning", "caption")
                         for element in app.get(kind))  # fmt: skip

    before = shown(url)
    assert "Signed, not recomputed: signed by **ci-runner**" in before and "Verified" not in before
    recorded = run_cli("verify", str(bundle), "--keys", str(trusted), "--record", env={"INFERSWEEP_DATABASE_URL": url})
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "recorded for the 2 of its Point(s) this results database holds" in " ".join(recorded.stdout.split())
    envelope = hashlib.sha256((bundle / ENVELOPE).read_bytes()).hexdigest()
    after = shown(url)
    assert "Verified: in a bundle signed by **ci-runner**" in after and envelope in after
    assert "every figure computed again from its raw per-request records by `infersweep verify` was the same" in after
    # The CLI says what the page says, a word per result.
    listed = run_cli("results", "--sweep", "to-bundle", env={"INFERSWEEP_DATABASE_URL": url, "COLUMNS": "250"})
    assert listed.returncode == 0 and listed.stdout.count(" verified ") == 2, listed.stdout

    store = tmp_path / "store"
    published = run_cli(
        "publish", "--snapshot", env={"INFERSWEEP_DATABASE_URL": url, "INFERSWEEP_ARTIFACTS": str(store)}
    )
    assert published.returncode == 0, published.stdout + published.stderr
    (snapshot,) = (store / "snapshot").glob("*.db")
    assert "Verified: in a bundle signed by **ci-runner**" in shown(f"sqlite:///{snapshot}")
    # The API says what the page says.
    items = json.loads((store / "api" / "v1" / "results.json").read_text())["items"]
    assert {(item["sweep"], item["verification"]) for item in items} == {("to-bundle", "verified")}
