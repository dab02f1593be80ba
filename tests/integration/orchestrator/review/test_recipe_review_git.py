"""`infersweep recipe diff --base REF` and `recipe changelog-check` against a git ref, in a throwaway git
repository (real `git` processes). Moved from the unit tier: it starts processes; the same file's pure checks stay
in tests/unit/orchestrator/review/test_recipe_review.py, whose helpers these use."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import deep_update
from tests.unit.orchestrator.review.test_recipe_review import AGENTIC, EXAMPLE, TRACE, example, invoke, write


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with two recipes (one replaying a trace) and an empty changelog, committed."""
    root = tmp_path / "repo"
    (root / "recipes" / "examples").mkdir(parents=True)
    (root / "traces" / "claude-code-weka").mkdir(parents=True)
    shutil.copy(EXAMPLE, root / "recipes" / "examples" / EXAMPLE.name)
    shutil.copy(AGENTIC, root / "recipes" / "examples" / AGENTIC.name)
    shutil.copy(TRACE, root / "traces" / "claude-code-weka" / TRACE.name)
    (root / "recipes" / "CHANGES.yaml").write_text("schema_version: 1\nentries: []\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def append_entry(root: Path, recipes: list[str], day: str = "2026-11-01") -> None:
    data = yaml.safe_load((root / "recipes" / "CHANGES.yaml").read_text())
    data["entries"].append({"date": day, "recipes": recipes, "summary": "test change", "pr": 7})
    (root / "recipes" / "CHANGES.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def test_diff_against_a_git_ref_reads_the_files_at_that_ref(repo: Path) -> None:
    recipe = repo / "recipes" / "examples" / EXAMPLE.name
    recipe.write_text(recipe.read_text().replace("concurrency: [1, 2, 4, 8]", "concurrency: [1, 2, 4, 8, 16]"))
    (repo / "recipes" / "examples" / AGENTIC.name).unlink()
    result = invoke("diff", "--base-ref", "main", "recipes", "--format", "json", "--changed-out", "changed.txt",
                    cwd=repo)  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["base"] == "main"
    status = {item["name"]: item["status"] for item in document["recipes"]}
    assert status == {"tiny-llama-simulated": "changed", "agentic-simulated": "removed"}
    removed = next(item for item in document["recipes"] if item["name"] == "agentic-simulated")
    assert removed["points"]["removed"] == ["replay-c1-r0", "replay-c2-r0"]  # the trace was read at the ref
    assert (repo / "changed.txt").read_text() == "recipes/examples/tiny-llama-simulated.yaml\n"

    gone = invoke("diff", "--base-ref", "HEAD", repo / "recipes" / "examples" / AGENTIC.name, cwd=repo)
    assert gone.exit_code == 2  # the file is gone from the working tree: it cannot be loaded as the head


def test_diff_against_a_bad_git_ref_is_an_error(repo: Path) -> None:
    for ref in ("no-such-branch", "--upload-pack=touch /tmp/x"):
        result = invoke("diff", "--base-ref", ref, "recipes", cwd=repo)
        assert result.exit_code == 2, (ref, result.output)
        assert "--base-ref" in result.output


def test_a_symbolic_link_at_the_base_ref_is_refused(repo: Path) -> None:
    (repo / "recipes" / "examples" / "link.yaml").symlink_to("/etc/hostname")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "link")
    (repo / "recipes" / "examples" / "link.yaml").unlink()
    result = invoke("diff", "--base-ref", "HEAD", "recipes", cwd=repo)
    assert result.exit_code == 2
    assert "recipes/examples/link.yaml" in result.output and "not a symbolic link" in result.output


def test_base_at_a_ref_with_an_invalid_recipe_names_ref_and_file(repo: Path) -> None:
    recipe = repo / "recipes" / "examples" / EXAMPLE.name
    recipe.write_text(recipe.read_text().replace("precision: bf16", "precision: fp9"))
    git(repo, "commit", "-q", "-am", "broken")
    recipe.write_text(recipe.read_text().replace("precision: fp9", "precision: bf16"))
    result = invoke("diff", "--base-ref", "HEAD", "recipes", cwd=repo)
    assert result.exit_code == 2
    assert "HEAD:recipes/examples/tiny-llama-simulated.yaml" in result.output and "'fp9'" in result.output


def test_changelog_check_wants_an_entry_per_re_fingerprinted_recipe(repo: Path) -> None:
    recipe = repo / "recipes" / "examples" / EXAMPLE.name
    recipe.write_text(recipe.read_text().replace("precision: bf16", "precision: fp8"))
    missing = invoke("changelog-check", "--base-ref", "main", "recipes", cwd=repo)
    assert missing.exit_code == 2
    assert "tiny-llama-simulated" in missing.output and "      - tiny-llama-simulated\n" in missing.output

    append_entry(repo, ["tiny-llama-simulated"])
    assert invoke("changelog-check", "--base-ref", "main", "recipes", cwd=repo).exit_code == 0

    append_entry(repo, ["no-such-recipe"])
    unknown = invoke("changelog-check", "--base-ref", "main", "recipes", cwd=repo)
    assert unknown.exit_code == 2 and "entries[1].recipes" in unknown.output


def test_changelog_check_ignores_runner_changes_and_protects_merged_entries(repo: Path) -> None:
    recipe = repo / "recipes" / "examples" / EXAMPLE.name
    recipe.write_text(recipe.read_text().replace("runner: {kind: local}", "runner: {kind: local, point_timeout_s: 60}"))
    result = invoke("changelog-check", "--base-ref", "main", "recipes", cwd=repo)
    assert result.exit_code == 0, result.output
    assert "no entry needed" in result.output

    append_entry(repo, ["tiny-llama-simulated"])
    git(repo, "commit", "-q", "-am", "entry")
    changelog = repo / "recipes" / "CHANGES.yaml"
    changelog.write_text(changelog.read_text().replace("test change", "rewritten history"))
    edited = invoke("changelog-check", "--base-ref", "main", "recipes", cwd=repo)
    assert edited.exit_code == 2 and "merged entries never change" in edited.output


def test_changelog_check_of_added_and_removed_recipes(repo: Path) -> None:
    (repo / "recipes" / "examples" / AGENTIC.name).unlink()
    write(repo / "recipes" / "more", "new.yaml", deep_update(example(), {"name": "brand-new"}))
    result = invoke("changelog-check", "--base-ref", "main", "recipes", cwd=repo)
    assert result.exit_code == 2
    assert "['agentic-simulated', 'brand-new']" in result.output
    append_entry(repo, ["agentic-simulated", "brand-new"])
    assert invoke("changelog-check", "--base-ref", "main", "recipes", cwd=repo).exit_code == 0
