"""Reading and validating recipes: bounded, one line for every problem, the tools' real limits."""

import os

import pytest

from backupbench.errors import RecipeError
from backupbench.recipe import model
from backupbench.recipe.reader import MAX_RECIPE_BYTES, load_toml

GOOD = """
name = "r"
devices = ["/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vde"]
[[layout]]
name = "a"
kind = "lvm-linear"
devices = ["/dev/vdb"]
[[workload]]
kind = "kb2014"
"""


def recipe_file(tmp_path, text=GOOD, name="r.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path) -> str:
    with pytest.raises(RecipeError) as raised:
        model.load(path)
    line = raised.value.one_line()
    assert "\n" not in line
    return line


def test_a_device_or_a_directory_is_not_read(tmp_path):
    # /dev/zero once grew the process to 23 GB before the kernel killed it.
    assert "character device, not a file" in error_of("/dev/zero")
    assert "is a directory, not a file" in error_of(tmp_path)


def test_a_fifo_does_not_block(tmp_path):
    fifo = tmp_path / "recipe.fifo"
    os.mkfifo(fifo)
    assert "named pipe, not a file" in error_of(fifo)


def test_an_oversized_recipe_is_refused_before_it_is_read(tmp_path):
    path = recipe_file(tmp_path, GOOD + "#" * MAX_RECIPE_BYTES)
    assert "a recipe is at most 1 MiB" in error_of(path)


def test_not_utf8_and_deep_nesting_are_one_line(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    assert "line 1: byte 0xe9 is not UTF-8" in error_of(path)
    deep = recipe_file(tmp_path, "a = " + "[" * 5000 + "]" * 5000, "deep.toml")
    assert "nested too deeply" in error_of(deep)
    assert load_toml(recipe_file(tmp_path, GOOD, "fine.toml"))["name"] == "r"


def with_layout(tmp_path, layout: str, workload: str = 'kind = "kb2014"') -> str:
    return error_of(recipe_file(tmp_path, f"""
name = "r"
devices = ["/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vde"]
[[layout]]
name = "a"
{layout}
[[workload]]
{workload}
"""))


@pytest.mark.parametrize("layout, expected", [
    ('kind = "lvm-thin"\ndevices = ["/dev/vdb"]\nvirtual_size = "1GiB"\nchunk_size = 4611686018427387904',
     "layout[0].chunk_size: chunk_size must be a multiple of 64 KiB from 64 KiB to 1 GiB"),
    ('kind = "lvm-snapshot"\ndevices = ["/dev/vdb"]\norigin_size = "0B"\nsnapshot_size = "1GiB"',
     "layout[0].origin_size: must be more than 0 bytes"),
    ('kind = "lvm-linear"\ndevices = ["/dev/vdb"]\nfilesystem = { type = "xfs", block_size = 7 }',
     "layout[0].filesystem: block_size 7 is not one xfs takes here"),
    ('kind = "lvm-striped"\ndevices = ["/dev/vdb", "/dev/vdc"]\nstripe_size = "8MiB"',
     "layout[0].stripe_size: stripe_size must be a power of two from 4 KiB to 4 MiB"),
    ('kind = "mdraid"\nlevel = 6\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd", "/dev/vde"]\nchunk = "2GiB"',
     "layout[0].chunk: chunk must be a power of two from 4 KiB to 1 GiB"),
    ('kind = "lvm-linear"\ndevices = ["vdb"]', "layout[0].devices[0]: must be an absolute path"),
    ('kind = "lvm-linear"\ndevices = ["/dev/vdb"]\nfilesystem = { owner = "--reference=/etc/shadow" }',
     "layout[0].filesystem.owner:"),
    ('kind = "lvm-linear"\ndevices = ["/dev/vdb"]\nfilesystem = { type = "ext4", mkfs_options = ["/dev/sda"] }',
     "layout[0].filesystem.mkfs_options: mkfs_options may not contain '/'"),
    ('kind = "zfs"\nvdev = "draid2"\ndraid_data = 3\ndraid_spares = 1\ndevices = ["/dev/vdb", "/dev/vdc"]',
     "draid2:3d:2c:1s does not fit 2 devices: 3 data + 2 parity + 1 spare need at least 6"),
    ('kind = "zfs"\nvdev = "raidz1"\ndevices = ["/dev/vdb", "/dev/vdc"]\nlog = ["/dev/vdc"]',
     "layout[0]: /dev/vdc is in the data vdev and in the log vdev: give the log vdev its own devices"),
    ('kind = "zfs"\nvdev = "raidz2"\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd"]\nspecial = ["/dev/vde", "/dev/vdf"]',
     "a special vdev next to raidz2 needs 3 device(s) (a 3-way mirror, as redundant as the data), got 2"),
    ('kind = "zfs"\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd"]\nproperties = { recordsize = "3M" }',
     "layout[0].properties: recordsize = '3M': ZFS takes a power of two from 512 bytes to 16 MiB"),
    ('kind = "zfs"\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd"]\nproperties = { compression = "lz5" }',
     "layout[0].properties: compression = 'lz5': ZFS takes on, off, lzjb"),
    ('kind = "zfs"\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd"]\nproperties = { xatr = "sa" }',
     "'xatr' is not a ZFS dataset property backupbench can set; did you mean 'xattr'?"),
    ('kind = "zfs"\ndevices = ["/dev/vdb", "/dev/vdc", "/dev/vdd"]\nashift = 8',
     "layout[0].ashift: Input should be greater than or equal to 9"),
])
def test_values_no_tool_would_take_are_refused_at_the_schema(tmp_path, layout, expected):
    assert expected in with_layout(tmp_path, layout)


@pytest.mark.parametrize("workload, expected", [
    ('kind = "kb2014"\nsize = "0B"', "workload[0].size: the test file must be at least 4 KiB"),
    ('kind = "kb2014"\nsize = "99999999999PiB"', "workload[0].size:"),
    ('kind = "kb2014"\nblock_size = 0', "workload[0].block_size: must be a multiple of 4 KiB"),
    ('kind = "kb2014"\noperations = ["active-full", "active-full"]', "workload[0].operations: active-full is listed twice"),
    ('kind = "kb2014"\nruntime = "' + "9" * 400 + '"', "workload[0].runtime:"),
])
def test_workload_values_no_tool_would_take(tmp_path, workload, expected):
    assert expected in with_layout(tmp_path, 'kind = "lvm-linear"\ndevices = ["/dev/vdb"]', workload)


def test_errors_name_the_key_where_the_user_wrote_it(tmp_path):
    # "filesystem" is also a layout kind: the key must not be mistaken for the union's tag.
    assert "layout[0].filesystem: must be a table" in with_layout(
        tmp_path, 'kind = "lvm-linear"\ndevices = ["/dev/vdb"]\nfilesystem = "xfs"')
    assert "layout[0].filesystem.a: is not a known key" in with_layout(
        tmp_path, 'kind = "lvm-linear"\ndevices = ["/dev/vdb"]\nfilesystem = {a = 1}')


def test_small_files_without_folders_given_get_a_folder_each():
    from backupbench.workloads.smallfiles import DEFINITION, SmallFilesSpec
    assert SmallFilesSpec(files=10).folders == 10
    assert SmallFilesSpec.model_validate(DEFINITION.options_from({"files": "10"}, "quick")).folders == 10
    with pytest.raises(ValueError, match="folders"):
        SmallFilesSpec(files=10, folders=20)
