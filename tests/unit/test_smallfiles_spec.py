"""The small-file spec, presets and planning maths: pure, nothing touches a disk."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from backupbench.engines.smallfiles import file_paths, folder_paths, pattern_buffer
from backupbench.stats import nearest_rank as percentile
from backupbench.engines.smallfiles_workers import chunks
from backupbench.workloads.smallfiles import PHASES, PRESETS, SmallFilesSpec, phase_names


def bytes_needed(spec):
    return spec.job().bytes_needed()


def inodes_needed(spec):
    return spec.job().inodes_needed()


def required_free_bytes(spec):
    return spec.job().required_free_bytes()


def required_free_inodes(spec):
    return spec.job().required_free_inodes()


def test_defaults_are_field_note_e():
    spec = SmallFilesSpec()
    assert (spec.files, spec.file_size, spec.folders) == (104_857, 102_400, 1_048)
    assert spec.patterns == (0x00, 0xFF, 0x55, 0xAA)
    # 104,857 files of 100 KiB: 10 GiB less a fraction of one file.
    assert spec.data_bytes == 10_737_356_800 and 10 * 2**30 - spec.data_bytes < 102_400
    assert spec.flush == "sync-end" and spec.verify is False and spec.threads >= 1


def test_patterns_parse_from_text_and_lists():
    assert SmallFilesSpec(patterns="0x00,0xff").patterns == (0, 255)
    assert SmallFilesSpec(patterns=" 0x55 , 170 ").patterns == (0x55, 0xAA)
    assert SmallFilesSpec(patterns=["0xAA", 1]).patterns == (0xAA, 1)
    assert SmallFilesSpec(patterns="0x00").update_passes == 0


@pytest.mark.parametrize("bad", ["0x100", "-1", "0xzz", "", "ff", [True]])
def test_bad_patterns_are_refused(bad):
    with pytest.raises(pydantic.ValidationError):
        SmallFilesSpec(patterns=bad)


def test_sizes_keep_kib_and_kb_apart():
    assert SmallFilesSpec(file_size="100KiB").file_size == 102_400
    assert SmallFilesSpec(file_size="100KB").file_size == 100_000
    assert SmallFilesSpec(file_size="100k").file_size == 102_400
    assert SmallFilesSpec(file_size=4096).file_size == 4096
    with pytest.raises(pydantic.ValidationError):
        SmallFilesSpec(file_size="lots")


@pytest.mark.parametrize("field,value", [
    ("files", 0), ("folders", 0), ("threads", 0), ("file_size", 0), ("flush", "always"), ("colour", "red"),
])
def test_bad_values_are_refused(field, value):
    with pytest.raises(pydantic.ValidationError):
        SmallFilesSpec(**{field: value})


def test_more_folders_than_files_is_refused():
    with pytest.raises(pydantic.ValidationError, match="folders"):
        SmallFilesSpec(files=10, folders=11)


def test_spec_is_frozen_and_every_field_is_described():
    spec = SmallFilesSpec()
    with pytest.raises(pydantic.ValidationError):
        spec.files = 3  # type: ignore[misc]
    for name, field in SmallFilesSpec.model_fields.items():
        assert field.description, name


def test_presets():
    assert set(PRESETS) == {"field-note-e", "quick"}
    # Field note E's passes write its byte patterns; everything else backup-shaped data.
    assert PRESETS["field-note-e"] == SmallFilesSpec(data="pattern")
    assert SmallFilesSpec().content().kind == "incompressible"
    quick = PRESETS["quick"]
    assert (quick.files, quick.file_size, quick.folders) == (2_000, 102_400, 20)
    assert quick.patterns == SmallFilesSpec().patterns
    assert bytes_needed(quick) < bytes_needed(PRESETS["field-note-e"]) / 50


def test_phase_names_are_one_vocabulary():
    assert PHASES == ("create", "update-1", "update-2", "update-3", "verify")
    assert SmallFilesSpec().phases == PHASES[:-1]
    assert SmallFilesSpec(verify=True).phases == PHASES
    assert SmallFilesSpec(patterns="1,2").phases == ("create", "update-1")
    assert phase_names(0, True) == ("create", "verify")


def test_bytes_and_inodes_needed():
    spec = SmallFilesSpec(files=200, file_size="8KiB", folders=7)
    assert bytes_needed(spec) == 200 * 8192 + 8 * 4096
    # A partial block still takes a whole one.
    assert bytes_needed(SmallFilesSpec(files=10, file_size=5000, folders=2)) == 10 * 8192 + 3 * 4096
    assert inodes_needed(spec) == 200 + 7 + 1
    assert required_free_bytes(spec) == bytes_needed(spec) + 2**20  # the 1 MiB minimum headroom
    big = PRESETS["field-note-e"]
    assert required_free_bytes(big) == bytes_needed(big) + int(bytes_needed(big) * 0.05)
    assert required_free_inodes(big) > inodes_needed(big)


def test_files_are_spread_evenly_over_named_folders():
    spec = SmallFilesSpec(files=200, file_size=1, folders=7)
    paths = file_paths(spec.job())
    assert paths[0] == b"d0000/f000000" and paths[8] == b"d0001/f000008" and paths[199] == b"d0003/f000199"
    per_folder = {}
    for path in paths:
        per_folder.setdefault(path.split(b"/")[0], 0)
        per_folder[path.split(b"/")[0]] += 1
    assert sorted(per_folder) == folder_paths(spec.job())
    assert set(per_folder.values()) == {28, 29}
    wide = file_paths(SmallFilesSpec(files=12_001, file_size=1, folders=12_000).job())
    assert wide[11_999] == b"d11999/f011999" and wide[-1] == b"d00000/f012000"


def test_chunks_cover_every_file_once():
    for files, workers in ((200, 2), (7, 3), (104_857, 16), (5, 5)):
        ranges = chunks(files, workers)
        assert ranges[0][0] == 0 and ranges[-1][1] == files
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        sizes = [end - start for start, end in ranges]
        assert max(sizes) - min(sizes) <= 1


def test_percentile_is_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0
    assert percentile([7], 99) == 7.0 and percentile([], 50) == 0.0
    assert percentile([1, 2, 3], 50) == 2.0


def test_pattern_buffer():
    assert pattern_buffer(0xAA, 3) == b"\xaa\xaa\xaa"


def test_content_of_the_passes():
    spec = SmallFilesSpec(files=10, compress=50, verify=True)
    job = spec.job()
    assert job.content.kind == "compressible" and job.content.compress == 50 and len(job.patterns) == 4
    with pytest.raises(Exception, match="one byte per pass"):
        SmallFilesSpec(files=10, pattern=0x55)


@pytest.mark.parametrize("patterns, said", [
    ("0x00", "data: constant pattern 0x00"),
    ("0xff,0xff", "data: constant pattern 0xff"),
    ("0x00,0xff,0x55,0xaa", "data: constant pattern per pass: 0x00, 0xff, 0x55, 0xaa"),
])
def test_the_caption_says_the_patterns_the_passes_wrote(patterns, said):
    from backupbench.engines.content import from_settings, settings_label
    from backupbench.workloads.smallfiles import SmallFilesWorkload

    spec = SmallFilesSpec(data="pattern", patterns=patterns, files=10)
    settings = SmallFilesWorkload(spec).settings()
    assert settings_label(settings) == said == f"data: {spec.content().label}"
    assert from_settings(settings).constant
    # A recipe's entry reads the same (the caption of an apply run).
    assert settings_label({"recipe": {"workload": [{"kind": "smallfiles", **settings}]}}) == said


def test_fresh_data_ignores_the_patterns_in_the_caption():
    from backupbench.engines.content import settings_label
    from backupbench.workloads.smallfiles import SmallFilesWorkload

    spec = SmallFilesSpec(patterns="0x00,0xff", files=10)
    assert settings_label(SmallFilesWorkload(spec).settings()) == "data: incompressible (random, fresh for every block)"


def test_data_is_incompressible_by_default_and_patterns_only_when_asked():
    # Issue 25, item 5: `run --workload smallfiles` with no preset and no --data writes fresh,
    # incompressible data like every other workload; field note E's byte patterns only with
    # data = "pattern" (which --preset field-note-e and the example recipe set).
    from backupbench.cli import options as cli_options
    from backupbench.recipe import model
    from backupbench.recipe.reader import load_toml
    from backupbench.workloads.registry import WORKLOADS

    definition = WORKLOADS["smallfiles"]
    plain = cli_options.build(definition.options, definition.options_from({}, None))
    assert plain.content().kind == "incompressible" and plain.files == 104_857
    assert definition.build(plain, None).settings()["data"] == "incompressible"
    noted = cli_options.build(definition.options, definition.options_from({}, "field-note-e"))
    assert noted.content().kind == "pattern" and noted.content().passes == (0x00, 0xFF, 0x55, 0xAA)
    example = model.parse(load_toml(Path(__file__).parents[2] / "examples" / "field-note-e-snapshots.toml"))
    assert example.workload[0].content().kind == "pattern"
