"""The same recipe paths at a git ref, read with git itself (argv lists only, never a shell), into a scratch
directory: the base side of `recipe diff --base-ref` and `recipe changelog-check`.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.review.plan_report import CHANGELOG_FILE, PlannedRecipe, load_all
from recipes.errors import RecipeError

if TYPE_CHECKING:
    pass

_GIT_TIMEOUT_S = 60


class Git:
    """Read-only git access, argv lists only: `rev-parse`, `ls-tree`, `cat-file`, `merge-base`."""

    def __init__(self, near: Path) -> None:
        directory = near if near.is_dir() else near.parent
        directory = directory if directory.exists() else Path.cwd()
        self.root = Path(self._run(["rev-parse", "--show-toplevel"], cwd=directory, what="repository").strip())

    @staticmethod
    def _run(args: list[str], cwd: Path, what: str, text: bool = True) -> Any:
        try:
            done = subprocess.run(
                ["git", "--literal-pathspecs", *args],
                cwd=cwd,
                capture_output=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
                text=text,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RecipeError(
                str(cwd), [(what, " ".join(args), f"expected git to answer ({error})")], what="flags"
            ) from error
        if done.returncode != 0:
            message = done.stderr if text else done.stderr.decode(errors="replace")
            raise RecipeError(
                str(cwd), [(what, " ".join(args), f"git failed: {message.strip() or done.returncode}")], what="flags"
            )
        return done.stdout

    def commit(self, ref: str) -> str:
        if not ref or ref.startswith("-") or any(ch.isspace() or ord(ch) < 32 for ch in ref):
            raise RecipeError(
                "--base-ref", [("--base-ref", ref, "expected a git ref or commit (no leading '-')")], "flags"
            )
        try:
            return self._run(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], self.root, "--base-ref").strip()
        except RecipeError:
            raise RecipeError(
                "--base-ref", [("--base-ref", ref, f"expected a commit of the repository at {self.root}")], "flags"
            ) from None

    def relative(self, path: Path) -> str:
        absolute = Path(os.path.realpath(path))
        try:
            relative = absolute.relative_to(self.root)
        except ValueError:
            raise RecipeError(
                str(path), [("<path>", str(path), f"expected a path inside {self.root}")], "flags"
            ) from None
        return relative.as_posix() or "."

    def tree(self, commit: str, relative: str) -> list[tuple[str, str, str]]:
        """(mode, object, repository-relative path) of every file under `relative` at `commit`."""
        args = ["ls-tree", "-r", "-z", "--full-tree", commit]
        if relative != ".":
            args += ["--", relative]
        out = self._run(args, self.root, "--base-ref")
        entries = []
        for record in filter(None, out.split("\0")):
            meta, name = record.split("\t", 1)
            mode, kind, obj = meta.split()
            if kind == "blob":
                entries.append((mode, obj, name))
        return entries

    def blob(self, obj: str) -> bytes:
        return self._run(["cat-file", "blob", obj], self.root, "--base-ref", text=False)


def _materialise(git: Git, commit: str, files: list[tuple[str, str, str]], into: Path) -> None:
    """Write recipe files (and the traces they name, from the same commit) under `into`, as laid out in git."""
    from recipes.yamlio import read_yaml

    for mode, obj, name in files:
        if mode == "120000":
            raise RecipeError(f"{commit[:12]}:{name}", [("<file>", name, "expected a file, not a symbolic link")])
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git.blob(obj))
        try:
            data = read_yaml(target)
        except RecipeError:
            continue  # reported with the right label when the recipe is loaded
        workload = data.get("workload") if isinstance(data, dict) else None
        trace = workload.get("trace") if isinstance(workload, dict) else None
        if not isinstance(trace, str) or posixpath.isabs(trace):
            continue
        trace_name = posixpath.normpath(posixpath.join(posixpath.dirname(name), trace))
        if trace_name.startswith("../") or (into / trace_name).exists():
            continue
        for trace_mode, trace_obj, found in git.tree(commit, trace_name):
            if found == trace_name and trace_mode != "120000":
                (into / found).parent.mkdir(parents=True, exist_ok=True)
                (into / found).write_bytes(git.blob(trace_obj))


def load_at_ref(ref: str, paths: list[Path]) -> tuple[list[PlannedRecipe], Git, str]:
    """The recipes under `paths` as they were at git `ref` (in the repository holding the paths)."""
    from recipes.loader import REGISTRY_FILES

    if not paths:
        raise RecipeError("<arguments>", [("paths", [], "expected at least one recipe file or directory")], "flags")
    git = Git(paths[0])
    commit = git.commit(ref)
    wanted: dict[str, tuple[str, str, str]] = {}
    for path in paths:
        relative = git.relative(path)
        is_dir = path.is_dir() or not path.suffix
        for mode, obj, name in git.tree(commit, relative):
            leaf = posixpath.basename(name)
            if is_dir and (not name.endswith(".yaml") or leaf in REGISTRY_FILES or leaf == CHANGELOG_FILE):
                continue
            wanted.setdefault(name, (mode, obj, name))
    with tempfile.TemporaryDirectory(prefix="infersweep-ref-") as scratch:
        into = Path(scratch)
        _materialise(git, commit, sorted(wanted.values(), key=lambda item: item[2]), into)
        planned = load_all([(f"{ref}:{name}", into / name) for name in sorted(wanted)])
    # The scratch files are gone: keep only what was computed from them.
    return [_detach(item) for item in planned], git, commit


def _detach(item: PlannedRecipe) -> PlannedRecipe:
    return PlannedRecipe(
        name=item.name, file=item.file, path=None, fingerprint=item.fingerprint, document=item.document,
        jobs=item.jobs, points=item.points,
    )  # fmt: skip
