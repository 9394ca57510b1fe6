import pytest

from backupbench.cli import options as cli_options
from backupbench.errors import RecipeError
from backupbench.workloads.kb2014 import Kb2014Options, SuiteOptions
from backupbench.workloads.kb2014 import OPERATION_NAMES


def build(**values):
    return cli_options.build(SuiteOptions, values)


def test_defaults():
    options = build()
    assert options.size == 2**30 and options.block_size is None
    assert options.with_block_default(512 * 1024).block == 512 * 1024
    assert build(block_size="1m").with_block_default(512 * 1024).block == 2**20
    assert options.operations == OPERATION_NAMES and options.jobs == 1 and not options.buffered


def test_units_and_lists_parse():
    options = build(size="64MiB", runtime="2s", operations="restore-random,active-full", jobs="3",
                    backup_size="10TiB").with_block_default(512 * 1024)
    assert options.size == 64 * 2**20 and options.runtime == 2.0 and options.jobs == 3
    assert options.operations == ("restore-random", "active-full")
    assert options.backup_size == 10 * 2**40
    # Three jobs split 64 MiB into whole 512 KiB blocks.
    assert options.region_size == 42 * 512 * 1024  # 64 MiB / 3 = 42.67 blocks
    assert options.file_size == 3 * options.region_size <= options.size


@pytest.mark.parametrize("values,flag", [
    ({"size": "12x"}, "--size"),
    ({"runtime": "soon"}, "--runtime"),
    ({"jobs": "0"}, "--jobs"),
    ({"operations": "foo"}, "--operations"),
    ({"engine": "sync-ish"}, "--engine"),
    ({"block_size": "5000"}, "--block-size"),
    ({"size": "1MiB", "jobs": "4", "block_size": "512k"}, "options"),
])
def test_errors_name_the_flag(values, flag):
    with pytest.raises(RecipeError) as raised:
        build(**values)
    assert raised.value.message.startswith(flag + ":")


def test_a_workload_default_block_size_is_validated_too():
    with pytest.raises(RecipeError, match="too small for 4 job"):
        build(size="1MiB", jobs="4").with_block_default(512 * 1024)


def test_unknown_operation_lists_allowed_values():
    with pytest.raises(RecipeError, match="restore-random"):
        build(operations="active-full,nope")


def test_every_option_has_a_flag_and_help():
    import click

    @click.command()
    @cli_options.click_options(SuiteOptions)
    def cmd(**_):
        pass

    flags = {opt.opts[0]: opt for opt in cmd.params}
    for name, field in SuiteOptions.model_fields.items():
        flag = "--" + name.replace("_", "-")
        assert flag in flags and flags[flag].help and field.description in flags[flag].help


@pytest.mark.parametrize("name, size", [("local-16tb", 4 * 2**20), ("local", 2**20), ("lan", 512 * 2**10),
                                        ("wan", 256 * 2**10), ("LAN", 512 * 2**10), ("64k", 64 * 2**10)])
def test_veeam_block_sizes_by_name(name, size):
    assert cli_options.build(SuiteOptions, {"block_size": name}).block_size == size


def test_content_flags_reach_the_fio_job_and_bad_ones_name_the_flag():
    from backupbench.workloads.kb2014 import operation_job, OPERATIONS
    from pathlib import Path

    options = cli_options.build(Kb2014Options, {"compress": "50", "dedupe": "20"}).with_block_default(512 * 1024)
    text = operation_job(OPERATIONS["active-full"], options, Path("/srv/f.dat")).text()
    assert "buffer_compress_percentage=50" in text and "dedupe_percentage=20" in text and "refill_buffers=1" in text
    default = cli_options.build(Kb2014Options, {}).with_block_default(512 * 1024)
    assert "buffer_compress_percentage=0" in operation_job(OPERATIONS["active-full"], default, Path("/f")).text()
    with pytest.raises(RecipeError, match="--compress"):
        cli_options.build(SuiteOptions, {"compress": "100"})
    with pytest.raises(RecipeError, match="compressible"):
        cli_options.build(SuiteOptions, {"data": "incompressible", "compress": "10"})
