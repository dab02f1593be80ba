"""The fleet inventory: strict validation naming file, field and value; which targets a job may use."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipes.errors import ConfigurationError, RecipeError
from recipes.schema import Recipe
from runners.fleet.inventory import (
    INVENTORY_ENV,
    Inventory,
    SlurmTarget,
    SshAccess,
    SshTarget,
    TpuVmTarget,
    inventory_from_environment,
    load_inventory,
)
from runners.job import JobSpec
from runners.slurm.runner import _sbatch_argv
from tests.conftest import SIMULATED_RECIPE, deep_update

INSTALL = "install: {python: /opt/infersweep/.venv/bin/python, workdir: /srv/infersweep}"


def ssh_entry(name: str, hardware: str = "b200", ssh: str = "{address: 10.0.0.5, user: bench}") -> str:
    return f"  - kind: ssh\n    name: {name}\n    hardware: {hardware}\n    ssh: {ssh}\n    {INSTALL}\n"


FLEET = (
    "targets:\n"
    + ssh_entry("b200-a")
    + ssh_entry("b200-b", ssh="{address: 10.0.0.6, port: 2222, user: bench, identity_file_env: FLEET_KEY}")
    + "  - kind: tpu-vm\n    name: tpu-a\n    hardware: tpu-v7\n    ssh: {address: 10.0.1.5, user: bench}\n"
    + f"    {INSTALL}\n"
    + "    provisioning: {via: gke, project: bench, zone: us-central1-c, resource: tpu7-pool}\n"
    + "  - kind: slurm\n    name: cluster-a\n    hardware: b200\n    concurrent_jobs: 3\n"
    + f"    {INSTALL}\n"
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    return path


def test_a_valid_inventory_loads(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, FLEET))
    assert [type(target) for target in inventory.targets] == [SshTarget, SshTarget, TpuVmTarget, SlurmTarget]
    first = inventory.targets[0]
    assert isinstance(first, SshTarget)
    assert (first.ssh.port, first.ssh.known_hosts, first.ssh.identity_file()) == (22, "~/.ssh/known_hosts", None)


def test_unknown_hardware_key(tmp_path: Path) -> None:
    path = write(tmp_path, "targets:\n" + ssh_entry("b200-a", hardware="b201"))
    with pytest.raises(RecipeError) as raised:
        load_inventory(path)
    assert str(raised.value) == (
        f"{path}: invalid inventory\n  field 'targets[0].hardware': got 'b201'; expected a key of recipes/hardware.yaml"
    )
    assert raised.value.retryable is False


def test_duplicate_target_name(tmp_path: Path) -> None:
    path = write(tmp_path, "targets:\n" + ssh_entry("b200-a") + ssh_entry("b200-a", hardware="h100"))
    with pytest.raises(RecipeError) as raised:
        load_inventory(path)
    assert str(raised.value) == (
        f"{path}: invalid inventory\n"
        "  field 'targets[1].name': got 'b200-a'; expected a name not used by another target"
    )


def test_extra_field_on_a_target(tmp_path: Path) -> None:
    text = FLEET.replace("    provisioning:", "    provisoning: {via: gke}\n    provisioning:")
    with pytest.raises(RecipeError) as raised:
        load_inventory(write(tmp_path, text))
    assert str(raised.value) == (
        f"{tmp_path / 'inventory.yaml'}: invalid inventory\n"
        "  field 'targets[2].provisoning': got {'via': 'gke'}; unknown key (not in the inventory schema; check the spelling)"
    )


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        (ssh_entry("b200-a").replace("    hardware:", "    hardwre: b200\n    hardware:"), "targets[0].hardwre"),
        (ssh_entry("b200-a", ssh="{address: 10.0.0.5, user: bench, password: x}"), "targets[0].ssh.password"),
    ],
)
def test_extra_field_of_an_ssh_target_names_its_path(tmp_path: Path, entry: str, field: str) -> None:
    with pytest.raises(RecipeError) as raised:
        load_inventory(write(tmp_path, "targets:\n" + entry))
    assert f"  field '{field}': got " in str(raised.value)


def test_provisioning_via_the_legacy_api_is_refused(tmp_path: Path) -> None:
    text = FLEET.replace("via: gke", "via: tpu-api")
    with pytest.raises(RecipeError) as raised:
        load_inventory(write(tmp_path, text))
    assert "  field 'targets[2].provisioning.via': got 'tpu-api'; expected: Input should be 'gke' or " in str(
        raised.value
    )


def test_for_job_and_slots(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, FLEET))
    assert [target.name for target in inventory.for_job("ssh", "b200")] == ["b200-a", "b200-b"]
    assert [target.name for target in inventory.for_job("tpu-vm", "tpu-v7")] == ["tpu-a"]
    assert [target.name for target in inventory.for_job("slurm", "b200")] == ["cluster-a"]
    assert inventory.for_job("ssh", "tpu-v7") == []
    assert inventory.for_job("local", "b200") == []
    assert inventory.slots() == {"b200": 5, "tpu-v7": 1}  # two hosts, plus three Slurm slots
    assert Inventory().slots() == {}


def test_inventory_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INVENTORY_ENV, raising=False)
    assert inventory_from_environment().targets == []
    monkeypatch.setenv(INVENTORY_ENV, str(write(tmp_path, FLEET)))
    assert len(inventory_from_environment().targets) == 4


def test_identity_file_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    access = SshAccess(address="h", user="u", identity_file_env="FLEET_KEY")
    monkeypatch.delenv("FLEET_KEY", raising=False)
    with pytest.raises(ConfigurationError) as raised:
        access.identity_file()
    assert str(raised.value) == "inventory: identity_file_env names 'FLEET_KEY', which is not set in the environment"
    monkeypatch.setenv("FLEET_KEY", "~/keys/fleet")
    assert access.identity_file() == str(Path.home() / "keys" / "fleet")


def test_sbatch_flags_pass_through_but_never_the_runners_own(tmp_path: Path) -> None:
    flags = FLEET + "    sbatch_flags: ['--gres=gpu:8', '--constraint=nvl72']\n"
    (slurm,) = [target for target in load_inventory(write(tmp_path, flags)).targets if isinstance(target, SlurmTarget)]
    recipe = Recipe.model_validate(deep_update(SIMULATED_RECIPE, {"runner": {"kind": "slurm"}}))
    job = JobSpec(job_id="j-1", sweep="s", recipe=recipe, points=[], log_dir=str(tmp_path))
    argv = _sbatch_argv(job, slurm, "/w/jobs/j-1", "/w/jobs/j-1/job.sh")
    assert argv[-3:] == ["--gres=gpu:8", "--constraint=nvl72", "/w/jobs/j-1/job.sh"]
    assert "--job-name=j-1" in argv and "--nodes=1" in argv
    with pytest.raises(RecipeError) as raised:
        load_inventory(write(tmp_path, FLEET + "    sbatch_flags: ['--nodes=4']\n"))
    assert "field 'targets[3].sbatch_flags': got ['--nodes=4']; expected: " in str(raised.value)
    assert "'--nodes=4' sets --nodes, which the runner sets itself" in str(raised.value)
    with pytest.raises(RecipeError, match=r"'gpu:8' is not one"):
        load_inventory(write(tmp_path, FLEET + "    sbatch_flags: ['gpu:8']\n"))
