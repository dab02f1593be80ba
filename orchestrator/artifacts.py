"""Artifact store: per-request records, engine logs and snapshots, in a local directory or on S3.

Keys are content hashes (`<kind>/<sha256><suffix>`), so uploading the same file twice is a no-op and a
retry can never produce a second copy. Staged files are named by the same hash
(`staging/<kind>/<sha256><suffix>`), so no later sweep can overwrite a pending upload's bytes. The
database never waits on the store: the recorder commits a row with the artifact marked `pending`, then
uploads; a failed upload stays pending and `infersweep publish` finishes it later. Every upload and every
read checks the bytes against the row's SHA-256; a stored artifact's staged copy is removed.

`INFERSWEEP_ARTIFACTS` picks the store: a directory path (default `~/.infersweep/artifacts`) or
`s3://bucket/prefix`. For S3, `INFERSWEEP_S3_ENDPOINT_URL`, `INFERSWEEP_S3_REGION` and
`INFERSWEEP_S3_ADDRESSING` (`path` or `virtual`) configure the client, and `INFERSWEEP_S3_TIMEOUT_S` (10 by
default) bounds each connect and each read: with two attempts, an endpoint that accepts and never answers costs
an upload about 2 x 10 s, after which the recorder leaves uploads pending for a while (orchestrator/recorder.py);
credentials come from the usual AWS environment variables or profiles, never from recipes.
"""

from __future__ import annotations

import mimetypes
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from recipes.errors import ConfigurationError, InfrastructureError
from runners.host.paths import data_dir


def content_key(kind: str, digest: str, suffix: str) -> str:
    return f"{kind}/{digest}{suffix}"


class ArtifactStore(Protocol):
    def put(self, local_path: Path, key: str, overwrite: bool = False) -> str:
        """Store the file under `key` and return its URI. Content keys never need `overwrite`: an
        existing key already holds the same bytes. Raises InfrastructureError."""
        ...

    def get(self, key: str, target: Path) -> Path:
        """Fetch `key` into `target`."""
        ...

    def exists(self, key: str) -> bool:
        """Whether the store holds `key`."""
        ...


@dataclass
class LocalArtifactStore:
    root: Path

    def put(self, local_path: Path, key: str, overwrite: bool = False) -> str:
        target = self.root / key
        if overwrite or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            shutil.copyfile(local_path, partial)
            os.replace(partial, target)
        return target.as_uri()

    def get(self, key: str, target: Path) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.root / key, target)
        return target

    def exists(self, key: str) -> bool:
        return (self.root / key).is_file()


class S3ArtifactStore:
    def __init__(self, bucket: str, prefix: str = "") -> None:
        import boto3
        from boto3.s3.transfer import TransferConfig
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        addressing = os.environ.get("INFERSWEEP_S3_ADDRESSING", "path")
        if addressing not in {"path", "virtual"}:
            raise ConfigurationError(f"INFERSWEEP_S3_ADDRESSING: got {addressing!r}; expected 'path' or 'virtual'")
        timeout_text = os.environ.get("INFERSWEEP_S3_TIMEOUT_S", "10")
        try:
            timeout_s = float(timeout_text)
        except ValueError:
            timeout_s = -1.0
        if not 0 < timeout_s <= 3600:
            raise ConfigurationError(
                f"INFERSWEEP_S3_TIMEOUT_S: got {timeout_text!r}; expected seconds, more than 0 and at most 3600"
            )
        config = Config(
            s3={"addressing_style": addressing},
            retries={"max_attempts": 2, "mode": "standard"},
            connect_timeout=timeout_s,
            read_timeout=timeout_s,
        )
        self.client = boto3.client(
            "s3",
            endpoint_url=os.environ.get("INFERSWEEP_S3_ENDPOINT_URL") or None,
            region_name=os.environ.get("INFERSWEEP_S3_REGION") or "us-east-1",
            config=config,
        )
        # Transfers in the calling thread: Ctrl-C interrupts its socket wait at once. With boto3's thread pool, the
        # interrupted caller waited for the pool's thread to finish its read (an endpoint that never answers held
        # Ctrl-C off for the whole read timeout, 300 s in the fault tour).
        self.transfer = TransferConfig(use_threads=False)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def put(self, local_path: Path, key: str, overwrite: bool = False) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        full_key = self._key(key)
        try:
            if overwrite or not self._exists(full_key):
                # A bucket serves what it stores by its content type: JSON (the read-only API's views) as JSON.
                content_type, _ = mimetypes.guess_type(key)
                extra = {"ContentType": content_type} if content_type else None
                self.client.upload_file(str(local_path), self.bucket, full_key, ExtraArgs=extra, Config=self.transfer)
        except (BotoCoreError, ClientError) as error:
            raise InfrastructureError(
                f"upload of {local_path} to s3://{self.bucket}/{full_key} failed: {error}"
            ) from error
        return f"s3://{self.bucket}/{full_key}"

    def exists(self, key: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return self._exists(self._key(key))
        except (BotoCoreError, ClientError) as error:
            raise InfrastructureError(f"s3://{self.bucket}/{self._key(key)}: could not look it up: {error}") from error

    def _exists(self, full_key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=full_key)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                return False
            raise
        return True

    def get(self, key: str, target: Path) -> Path:
        from botocore.exceptions import BotoCoreError, ClientError

        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.client.download_file(self.bucket, self._key(key), str(target))
        except (BotoCoreError, ClientError) as error:
            raise InfrastructureError(f"download of s3://{self.bucket}/{self._key(key)} failed: {error}") from error
        return target


def store_from_environment() -> ArtifactStore:
    location = os.environ.get("INFERSWEEP_ARTIFACTS", "")
    if location.startswith("s3://"):
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        if not bucket:
            raise ConfigurationError(f"INFERSWEEP_ARTIFACTS: got {location!r}; expected s3://BUCKET[/PREFIX]")
        return S3ArtifactStore(bucket, prefix)
    root = Path(location) if location else data_dir() / "artifacts"
    return LocalArtifactStore(root)


# A second staging folder, on another disk: where artifacts are staged when the data directory's disk is full, so
# a finished Point keeps its evidence (pending upload) instead of stopping the sweep.
STAGING_SPARE_ENV = "INFERSWEEP_STAGING_SPARE"


def staging_dir() -> Path:
    """Where artifacts are written before they are stored, each under its content hash (removed once stored)."""
    path = data_dir() / "staging"
    path.mkdir(parents=True, exist_ok=True)
    return path


def staging_dirs() -> list[Path]:
    """The staging folders in the order they are tried: the data directory's, then the spare (`STAGING_SPARE_ENV`)
    where one is named."""
    spare = os.environ.get(STAGING_SPARE_ENV)
    return [staging_dir(), *([Path(spare)] if spare else [])]


def is_staged(path: Path) -> bool:
    """Whether `path` is a staged copy (in a staging folder), and so ours to remove once stored."""
    resolved = path.resolve()
    return any(resolved.is_relative_to(folder.resolve()) for folder in staging_dirs())
