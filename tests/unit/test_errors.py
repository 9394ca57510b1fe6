from backupbench.errors import ProcessError, reason_line


def test_the_reason_is_the_line_before_the_usage_text():
    stderr = "Filesystem must be larger than 300MB.\nUsage: mkfs.xfs\n/* blocksize */ [-b size=num]\n<value> is xxx\n"
    assert reason_line(stderr) == "Filesystem must be larger than 300MB."
    assert reason_line("warning\nfatal: it broke\n") == "fatal: it broke"
    assert reason_line("") == "no error output"
    error = ProcessError(["mkfs.xfs", "/dev/x"], 1, stderr)
    assert error.message == "mkfs.xfs failed (exit 1): Filesystem must be larger than 300MB."
