"""`bundle keygen`, `bundle make` and `verify`: signed result bundles anyone can check offline
(orchestrator/bundles.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from orchestrator.cli.output import console, fail
from recipes.errors import InferSweepError

if TYPE_CHECKING:
    from orchestrator.artifacts import ArtifactStore

bundle_app = typer.Typer(help="Signed result bundles: what each Point was computed from, checkable offline.",
                         no_args_is_help=True)  # fmt: skip


@bundle_app.command("keygen")
def keygen(
    owner: Annotated[str, typer.Option(help="Who signs with the key: a runner's host or a contributor's name.")],
    private_key: Annotated[Path, typer.Option(help="Where to write the new private key (PEM, owner-only).")],
) -> None:
    """A new ed25519 signing key; prints the entry to add to recipes/trusted_keys.yaml."""
    from orchestrator.bundles import new_key
    from recipes.errors import ConfigurationError

    if private_key.exists():
        fail(ConfigurationError(f"--private-key: {private_key} exists; a key is never overwritten"))
    public = new_key(private_key)
    console.print(f"private key written to {private_key}; add this entry under `keys:` in "
                  "recipes/trusted_keys.yaml:")  # fmt: skip
    print(f"  - owner: {owner}\n    public_key: {public}")


@bundle_app.command("make")
def make(
    sweep: Annotated[str, typer.Argument(help="The sweep whose Points to bundle.")],
    key: Annotated[Path, typer.Option(help="The ed25519 private key to sign with (`infersweep bundle keygen`).")],
    out: Annotated[Path, typer.Option(help="A new folder for the bundle.")],
    keys: Annotated[
        Path | None, typer.Option(help="The trusted keys naming the signer (default: recipes/trusted_keys.yaml).")
    ] = None,
) -> None:
    """Bundle a sweep's Points with their raw records and recipes, signed (an in-toto Statement in a DSSE envelope);
    each Point is recorded as signed (the hub's run detail says so)."""
    from db.session import open_database
    from orchestrator.bundles import write_bundle
    from recipes.trusted_keys import TRUSTED_KEYS, load_trusted_keys

    try:
        count = write_bundle(open_database(writes=True), sweep, key, out, load_trusted_keys(keys or TRUSTED_KEYS))
    except InferSweepError as error:
        fail(error)
    check = f"infersweep verify {out}" + (f" --keys {keys}" if keys else "")
    console.print(f"bundle of {count} Point(s) written to {out}; check it with `{check}`")


def verify(
    bundle: Annotated[
        str,
        typer.Argument(
            metavar="BUNDLE|STORE",
            help="A bundle folder (`infersweep bundle make`), or an artifact store that `publish --snapshot` wrote "
            "(a folder or s3://BUCKET/PREFIX): its chain of snapshots is checked.",
        ),
    ],
    keys: Annotated[Path | None, typer.Option(help="The trusted keys (default: recipes/trusted_keys.yaml).")] = None,
    record: Annotated[
        bool,
        typer.Option(
            help="When it verifies, record what it says of each Point in the results "
            "database (the hub's run detail shows it)."
        ),
    ] = False,
) -> None:
    """Check a bundle offline: the signer is trusted, the signature and every file's hash hold, each recipe is its
    fingerprint; then recompute every figure of every Point from its raw records and say what differs. Or check a
    store's published snapshots: each is the bytes its hash names, names its parent, and keeps every Point its parent
    published unchanged or records its retraction. Exit 1 when it does not verify."""
    from orchestrator.artifacts import S3ArtifactStore
    from orchestrator.bundles import verify_bundle
    from orchestrator.publish import LATEST_SNAPSHOT_KEY
    from recipes.trusted_keys import TRUSTED_KEYS, load_trusted_keys

    if bundle.startswith("s3://"):
        bucket, _, prefix = bundle.removeprefix("s3://").partition("/")
        verify_snapshots(S3ArtifactStore(bucket, prefix), bundle)
        return
    if (Path(bundle) / LATEST_SNAPSHOT_KEY).is_file():
        from orchestrator.artifacts import LocalArtifactStore

        verify_snapshots(LocalArtifactStore(Path(bundle)), bundle)
        return
    try:
        trusted = load_trusted_keys(keys or TRUSTED_KEYS)
    except InferSweepError as error:
        fail(error)
    found = verify_bundle(Path(bundle), trusted)
    if found.refused is not None:
        console.print(f"[red]not verified[/red]: {found.refused}")
        raise typer.Exit(1)
    for difference in found.differences:
        console.print(f"[red]differs[/red]: {difference}")
    if found.differences:
        console.print(f"[red]not verified[/red]: {len(found.differences)} figure(s) differ from their records")
        raise typer.Exit(1)
    unrecorded = found.points - found.recomputed
    rest = f"; {unrecorded} without records (imported: checked by their hash only)" if unrecorded else ""
    console.print(f"verified: signed by {found.owner}; {found.points} Point(s), {found.recomputed} recomputed from "
                  f"their records with every figure the same{rest}")  # fmt: skip
    if record:
        from db.session import open_database
        from orchestrator.bundles import record_verification

        try:
            held = record_verification(open_database(writes=True), Path(bundle), found)
        except InferSweepError as error:
            fail(error)
        console.print(f"recorded for the {held} of its Point(s) this results database holds")


def verify_snapshots(store: ArtifactStore, shown: str) -> None:
    """`verify STORE`: the store's chain of snapshots from the newest, each link checked (snapshot_chain.py)."""
    from orchestrator.snapshot_chain import LATEST_SNAPSHOT_KEY, latest_sha256, verify_chain
    from recipes.errors import ConfigurationError

    try:
        newest_sha256 = latest_sha256(store)
        if newest_sha256 is None:
            raise ConfigurationError(f"{shown}: no {LATEST_SNAPSHOT_KEY}; nothing was published there yet")
        found = verify_chain(store, newest_sha256)
    except InferSweepError as error:
        fail(error, code=1)
    for problem in found.problems:
        console.print(f"[red]broken[/red]: {problem}", highlight=False)
    if found.problems:
        console.print(f"[red]not verified[/red]: {len(found.problems)} problem(s) in the chain of snapshots in {shown}")
        raise typer.Exit(1)
    retractions = sum(len(publication.retractions) for publication in found.publications)
    newest = found.publications[0]
    console.print(f"verified: {len(found.publications)} snapshot(s) in {shown}, each the bytes its hash names, each "
                  "keeping every Point its parent published or recording its retraction "
                  f"({retractions} retraction(s)); newest {newest.sha256} with {newest.points} Point(s)",
                  highlight=False)  # fmt: skip
