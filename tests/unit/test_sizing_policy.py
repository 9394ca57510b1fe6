"""The backup policy as data: its fields as flags, one line per bad input, the retention rule."""

import pytest

from backupbench.cli import options as cli_options
from backupbench.errors import InputError, RecipeError
from backupbench.sizing.policy import BackupPolicy, RepositoryOptions, check_policy, parse_ratio, reduction_source

CANDIDATES = {"layout": "raid6,draid2", "disks": "24", "disk_size": "16TB"}


def options(**values) -> RepositoryOptions:
    return cli_options.build(RepositoryOptions, {"protected": "50TB", "change_rate": "5%", **CANDIDATES, **values})


def test_flags_become_the_policy_the_disks_and_the_candidates():
    given = options(reduction="3:1", dailies="30", weeklies="8", window="6h", disk_speed="250MB/s",
                    block_clone=True, from_run="draid2=latest")
    policy, disk = given.policy(), given.disk()
    assert (policy.protected, policy.reduction, policy.dailies, policy.weeklies) == (50 * 10**12, 3.0, 30, 8)
    assert policy.window == 6 * 3600 and policy.block_clone and policy.method == "forward-synthetic"
    assert disk.disk_speed == 250 * 10**6 and disk.disk_access_time == 0.008
    assert [spec.layout for spec in given.specs()] == ["raid6", "draid2"]
    assert given.from_run == ("draid2=latest",)
    assert reduction_source(policy) == "given"
    assert reduction_source(options().policy()).startswith("default 2:1")


@pytest.mark.parametrize("text, ratio", [("2:1", 2.0), ("2", 2.0), ("2.5:1", 2.5), (" 3 : 1 ", 3.0), (4, 4.0)])
def test_ratios(text, ratio):
    assert parse_ratio(text) == ratio


@pytest.mark.parametrize("values, message", [
    ({"protected": "0"}, "--protected: must be more than 0 bytes"),
    ({"change_rate": "0%"}, "--change-rate: Input should be greater than 0"),
    ({"change_rate": "150%"}, "--change-rate: Input should be less than or equal to 100"),
    ({"reduction": "1:2"}, "--reduction: not a ratio: '1:2'"),
    ({"reduction": "0.5"}, "--reduction: Input should be greater than or equal to 1"),
    ({"dailies": "0"}, "--dailies: Input should be greater than or equal to 1"),
    ({"method": "weekly"}, "--method: must be one of"),
    ({"window": "0s"}, "--window: Input should be greater than 0"),
    ({"horizon": "0"}, "--horizon: Input should be greater than or equal to 1"),
    ({"afr": "0%"}, "--afr: Input should be greater than 0"),
])
def test_bad_values_are_one_line_naming_the_flag(values, message):
    with pytest.raises(RecipeError) as caught:
        options(**values)
    assert caught.value.message.startswith(message) and "\n" not in caught.value.message


@pytest.mark.parametrize("method", ["forever-forward", "reverse-incremental"])
def test_gfs_needs_a_method_that_makes_periodic_fulls(method):
    with pytest.raises(InputError) as caught:
        check_policy(BackupPolicy(protected=10**12, change_rate=5, method=method, monthlies=12, yearlies=1))
    assert caught.value.message == (f"--monthlies 12, --yearlies 1 with --method {method}: GFS keeps periodic fulls, "
                                    f"and {method} never makes one")
    assert "forward-synthetic" in caught.value.fix


def test_monthlies_without_weeklies_are_fine_with_weekly_fulls():
    assert check_policy(BackupPolicy(protected=10**12, change_rate=5, method="forward-active", monthlies=12)) == []


def test_rto_needs_a_restore_size():
    with pytest.raises(InputError, match="--rto needs --restore-size"):
        check_policy(BackupPolicy(protected=10**12, change_rate=5, rto=3600))
    assert check_policy(BackupPolicy(protected=10**12, change_rate=5, rto=3600, restore_size=10**12)) == []


def test_block_clone_notes():
    active = check_policy(BackupPolicy(protected=10**12, change_rate=5, method="forward-active", block_clone=True))
    assert active == ["block clone saves nothing with forward-active: each active full is written anew"]
    reverse = check_policy(BackupPolicy(protected=10**12, change_rate=5, method="reverse-incremental",
                                        block_clone=True))
    assert "compact" in reverse[0]


def test_retention_text():
    policy = BackupPolicy(protected=1, change_rate=1, dailies=30, weeklies=1, monthlies=12, yearlies=0)
    assert policy.retention_text() == "30 dailies + 1 weekly + 12 monthlies"
