"""A recipe of several layouts measured with repeats says that each layout's samples ran back
to back (runner/apply.back_to_back_note), since layouts are provisioned one after another."""

from backupbench.runner.apply import back_to_back_note


def test_several_layouts_with_repeats_say_their_samples_ran_back_to_back():
    note = back_to_back_note([3, 1], layouts=2)
    assert note is not None and note.startswith("repeats: each layout's 3 samples ran back to back")
    assert "built, measured and torn down before the next" in note


def test_one_layout_or_one_sample_needs_no_such_note():
    assert back_to_back_note([3], layouts=1) is None
    assert back_to_back_note([1, 1], layouts=3) is None
    assert back_to_back_note([], layouts=2) is None
