"""Every `backupbench` command README.md and docs/*.md show, and how each is checked
(docs/development.md, "Commands in the docs"): tests/unit/test_doc_commands.py parses each
through the real command line and requires it here or marked; tests/integration/
test_doc_commands_run.py runs the ones listed in RUN_HERE for real.

What counts as a command: in a fenced `sh` block, a line whose first word is `backupbench`,
a path ending in `/backupbench`, or `python3.X NAME.pex`; in any other fenced block (pasted
output), a line that starts with `$ ` followed by one of those. A trailing `\\` continues the
line. The command ends at a pipe, a redirection, `&&`, `||` or `;`, and at an unquoted `#`,
whose comment may carry a marker: `# lab` (needs the lab VM or spare block devices it would
format) or `# hosts` (needs the other machines it names).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).parents[1]
MARKERS = {"lab": "needs the lab VM or spare block devices it would format",
           "hosts": "needs the other machines it names (fio servers, agents)"}
_FENCE = re.compile(r"^\s*```(\S*)\s*$")
_CUT = {"|", "||", "&&", ";", ">", ">>", "<", "&", "2>", "2>&1"}
_MARKER = re.compile(r"^#\s*(\w+)")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class DocCommand:
    path: Path
    line: int
    text: str          # as the page shows it, up to the first pipe, redirection or comment
    argv: tuple[str, ...]  # its arguments after the program
    marker: str        # "lab", "hosts" or ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _split_comment(text: str) -> tuple[str, str]:
    """The command and its `#` comment (an unquoted # after a space or at the start)."""
    quote = ""
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or text[index - 1].isspace()):
            return text[:index], text[index:]
    return text, ""


def _program_args(tokens: list[str]) -> list[str] | None:
    """The arguments after backupbench's program, or None when the line runs something else."""
    if tokens and (tokens[0] == "backupbench" or tokens[0].endswith("/backupbench")):
        return tokens[1:]
    if len(tokens) > 1 and re.fullmatch(r"python3(\.\d+)?", tokens[0]) and tokens[1].endswith(".pex"):
        return tokens[2:]
    return None


def _command(path: Path, line: int, text: str) -> DocCommand | None:
    body, comment = _split_comment(text)
    lexer = shlex.shlex(body, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    cut = next((i for i, token in enumerate(tokens) if token in _CUT), len(tokens))
    tokens = tokens[:cut]
    args = _program_args(tokens)
    if args is None:
        return None
    found = _MARKER.match(comment.strip())
    marker = found.group(1) if found and found.group(1) in MARKERS else ""
    return DocCommand(path, line, shlex.join(tokens), tuple(args), marker)


def _logical_lines(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines with their `\\` continuations joined, each with the number of its first line."""
    joined, start, parts = [], None, []
    for number, text in lines:
        if start is None:
            start = number
        if text.rstrip().endswith("\\"):
            parts.append(text.rstrip()[:-1])
            continue
        parts.append(text)
        joined.append((start, " ".join(part.strip() for part in parts)))
        start, parts = None, []
    if parts:
        joined.append((start, " ".join(part.strip() for part in parts)))
    return joined


def commands_in(path: Path) -> list[DocCommand]:
    found, block, language = [], None, ""
    for number, text in enumerate(path.read_text().splitlines(), 1):
        fence = _FENCE.match(text)
        if fence and block is None:
            block, language = [], fence.group(1)
            continue
        if fence:
            found += _block_commands(path, block, language)
            block = None
            continue
        if block is not None:
            block.append((number, text))
    return found


def _block_commands(path: Path, block: list[tuple[int, str]], language: str) -> list[DocCommand]:
    commands = []
    for number, text in _logical_lines(block):
        text = text.strip()
        prompted = text.startswith("$ ")
        if language != "sh" and not prompted:
            continue
        command = _command(path, number, text[2:] if prompted else text)
        if command is not None:
            commands.append(command)
    return commands


def all_commands() -> list[DocCommand]:
    return [command for path in doc_files() for command in commands_in(path)]


# ---- The commands the tests run ------------------------------------------------------------

@dataclass(frozen=True)
class Real:
    """A command run for real by tests/integration/test_doc_commands_run.py: `swaps` replace whole
    arguments (a path by the test's folder, a size or a count by a small one), `extra` is
    appended; {dir} is a scratch folder, {endpoint} the test's MinIO, {xfs} an XFS with reflink."""

    command: str
    swaps: dict[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    exit_codes: tuple[int, ...] = (0,)

    def argv(self, places: dict[str, str]) -> list[str]:
        args = shlex.split(self.command)
        program = 2 if args[0].startswith("python") else 1
        return [self.swaps.get(arg, arg).format(**places) for arg in args[program:]] + \
            [arg.format(**places) for arg in self.extra]


# What the doc shows -> a 32 MiB file, 1 s phases, in the test's folder.
SMALL = {"/srv/backups": "{dir}", "64GiB": "32MiB", "4GiB": "32MiB", "60s": "1s"}
# fio's steady state over a 1 s window (one sample) writes "-nan" into its JSON: 2 s is the least.
STEADY = {**SMALL, "10s": "2s", "120s": "6s"}
# fio's warm-up, left out where the page does not set it: a second a phase saved.
NO_RAMP = ("--ramp", "0")
# A gate's verdict depends on the machine: met (0) or missed (5), never a bad expectation (2).
GATE = (0, 5)

# In the order the integration test runs them: one results folder, so `latest` and the
# labels name the runs made just before.
RUN_HERE: tuple[Real, ...] = (
    Real("backupbench run --help"),
    Real("backupbench run /srv/backups --size 64GiB --runtime 60s --backup-size 20TiB --label before", SMALL,
         extra=NO_RAMP),
    Real("backupbench run /srv/backups --operations active-full,restore-random --jobs 4", SMALL,
         extra=("--size", "32MiB", "--runtime", "1s", *NO_RAMP)),
    Real("backupbench show latest --baseline before --expect 'restore-random>=300MiB/s'", exit_codes=GATE),
    Real("backupbench history"),
    Real("backupbench report latest --html report.html"),
    Real("backupbench run /srv/backups --workload smallfiles --preset quick --verify", SMALL),
    Real("backupbench size capacity --disks 45 --disk-size 6TB --layout draid2 --draid-data 3 --draid-spares 2"),
    Real("backupbench run /srv/backups --size 64GiB --runtime 60s --block-size lan --jobs 2", SMALL, extra=NO_RAMP),
    Real("backupbench run /srv/backups --workload first-write --size 4GiB", SMALL, extra=("--runtime", "1s")),
    Real("backupbench run /srv/backups --compress 50 --dedupe 30 --operations active-full", SMALL,
         extra=("--size", "32MiB", "--runtime", "1s", *NO_RAMP)),
    Real("backupbench export-fio synthetic-full --path /srv/backups --size 64GiB", SMALL),
    Real("backupbench monitor --count 3"),
    Real("backupbench run /srv/backups --size 64GiB --operations active-full --ramp 2s --steady-state "
         "iops_slope:0.3% --steady-state-window 10s --runtime 120s", STEADY),
    Real("backupbench run /srv/backups --size 64GiB --operations restore-random --monitor-interval 0.5s "
         "--warn-latency 20ms --warn-load 4", SMALL, extra=("--runtime", "1s", *NO_RAMP)),
    Real("backupbench run /srv/backups --operations active-full --runtime 10s", SMALL,
         extra=("--size", "32MiB", "--runtime", "1s", *NO_RAMP)),
    Real("backupbench devices"),
    Real("backupbench devices --json"),
    Real("backupbench cleanup"),
    Real("backupbench hosts unit 10.0.0.5"),
    Real("backupbench hosts agent-unit 10.0.0.5 --token-file /etc/backupbench/agent-token --root /srv/bb "
         "--tls-cert /etc/backupbench/agent.pem --tls-key /etc/backupbench/agent.key"),
    Real("backupbench plan examples/hosts-kb2014.toml"),
    Real("backupbench size rebuild --layout raid6,draid2 --disks 24 --disk-size 16TB --rebuild-rate 100MB/s"),
    Real("backupbench size snapshot --origin 100GB --change 10GB"),
    Real("backupbench size window --backup-size 20TiB --speed 500MiB/s"),
    Real("backupbench size window --backup-size 20TiB --from-run latest"),
    Real("backupbench size repository --protected 50TB --change-rate 5% --dailies 30 --monthlies 12 "
         "--layout raidz2,draid2 --disks 24 --disk-size 16TB --disk-speed 250MB/s", exit_codes=(5,)),
    Real("backupbench size repository --protected 50TB --change-rate 5% --dailies 30 --weeklies 8 --monthlies 12 "
         "--yearlies 3 --window 8h --layout raid6,raidz2,draid2,minio-ec --draid-spares 1 --disks 24 "
         "--disk-size 16TB --disk-speed 250MB/s", exit_codes=(5,)),
    Real("backupbench size repository --recipe examples/repository-plan.toml --block-clone --monthlies 4 "
         "--yearlies 1"),
    Real("backupbench run /srv/backups --size 64GiB --runtime 60s --operations active-full,restore-random --repeat 3 "
         "--label one-job", SMALL, extra=NO_RAMP),
    Real("backupbench run /srv/backups --size 64GiB --runtime 60s --operations active-full,restore-random --repeat 3 "
         "--jobs 4 --label four-jobs", SMALL, extra=NO_RAMP),
    Real("backupbench show four-jobs --baseline one-job --expect 'restore-random>=300MiB/s@low'", exit_codes=GATE),
    Real("backupbench report one-job four-jobs --html compare.html"),
    # A sweep of two points (iodepth 1 and 4, one job), each 3 samples of 1 s, then its page.
    Real("backupbench sweep /srv/backups --size 64GiB --runtime 60s --operations restore-random --over iodepth=1,4,16 "
         "--over jobs=1,2 --repeat 3", {**SMALL, "iodepth=1,4,16": "iodepth=1,4", "jobs=1,2": "jobs=1"},
         extra=NO_RAMP),
    Real("backupbench report --sweep latest"),
    Real("backupbench run /srv/backups --workload smallfiles --preset quick --label small", SMALL),
    Real("backupbench show small --expect 'create>=2000files/s'", exit_codes=GATE),
    Real("backupbench run /srv/backups --size 64GiB --expect 'restore-random>=300MiB/s' --expect "
         "'active-full.p99<=50ms'", SMALL, extra=("--runtime", "1s", *NO_RAMP), exit_codes=GATE),
    Real("backupbench history --csv --limit 10"),
    Real("backupbench show latest --backup-size 50TiB"),
    Real("backupbench show latest --json"),
    Real("backupbench show latest --csv"),
    Real("backupbench export --prometheus latest"),
    Real("backupbench export --prometheus"),
    Real("backupbench run /proc", exit_codes=(3,)),
    Real(".venv/bin/backupbench run /srv/backups --size 64GiB --backup-size 20TiB", SMALL,
         extra=("--runtime", "1s", *NO_RAMP)),
)

# Run by tests/integration/test_doc_commands_run.py against the MinIO it starts (credentials in the
# environment, as the page says).
S3_OBJECTS = {"http://10.0.0.5:9000": "{endpoint}", "2000": "40", "1MiB-96MiB": "64KiB-1MiB"}
RUN_ON_MINIO: tuple[Real, ...] = (
    Real("backupbench run --workload s3 --endpoint http://10.0.0.5:9000 --bucket backups --create-bucket "
         "--objects 2000", S3_OBJECTS),
    Real("backupbench run --workload s3 --endpoint http://10.0.0.5:9000 --bucket locked --create-bucket "
         "--object-lock governance --retention 1d --objects 2000", S3_OBJECTS),
    Real("backupbench run --workload s3 --endpoint http://10.0.0.5:9000 --bucket backups --create-bucket --objects 60 "
         "--object-size 1MiB-96MiB --s3-phases put,get,mixed,delete --mix put=45,get=45,list=5,delete=5",
         S3_OBJECTS),
)

# Run on an XFS with reflink the test makes on a loop device (root).
RUN_ON_XFS: tuple[Real, ...] = (
    Real("backupbench run /srv/xfs-repo --workload block-clone --full-size 8GiB --increments 5 --change-rate 5%",
         {"/srv/xfs-repo": "{xfs}", "8GiB": "64MiB", "5": "3"}, extra=("--restore-runtime", "1s")),
    # A 32 MiB full for 10 days, measured every 5, restores of 1 s.
    Real("backupbench run /srv/xfs-repo --workload aging --full-size 2GiB --days 120 --block-clone --dailies 14 "
         "--weeklies 4", {"/srv/xfs-repo": "{xfs}", "2GiB": "32MiB", "120": "10"},
         extra=("--measure-every", "5", "--runtime", "1s", "--ramp", "0")),
    Real("backupbench run /srv/xfs-repo --workload aging --full-size 512MiB --days 42 --measure-every 14 --block-clone "
         "--dailies 14 --weeklies 4 --runtime 3s",
         {"/srv/xfs-repo": "{xfs}", "512MiB": "32MiB", "42": "10", "14": "5", "3s": "1s"}, extra=("--ramp", "0")),
)

# Commands another test runs, named; what it changes is said beside each.
RUN_ELSEWHERE: dict[str, str] = {
    # the run it plans from stored by the test first (docs/sizing.md says it was written by hand)
    "backupbench size repository --protected 50TB --change-rate 5% --dailies 30 --weeklies 8 --monthlies 4 "
    "--yearlies 1 --restore-size 2TB --rto 8h --layout raidz2 --disks 24 --disk-size 16TB --rebuild-rate 200MB/s "
    "--from-run 20261128T090000-5ca1ed00":
        "tests/integration/test_size_repository_cli.py::test_the_pages_plan_scaled_from_six_disks_to_24",
    # as written, then checked against the shipped schema
    "backupbench size capacity --disks 6 --disk-size 6TB --layout raid6,raidz2 --json":
        "tests/integration/test_json_schema_cli.py::test_the_documented_validation_command_works_as_written",
    # the bundle installed into a venv, `run` on a small file
    "/opt/backupbench/bin/backupbench run /srv/backups --size 64GiB":
        "tests/integration/test_dist.py::test_bundle_installs_without_an_index_and_runs_the_backup_suite",
    # the bundle's pex, with nothing installed, `run` on a small file
    "python3.10 backupbench-cp310.pex run /srv/backups --size 64GiB":
        "tests/integration/test_dist.py::test_bundled_pex_runs_the_backup_suite_with_nothing_installed",
    # a job.vbk and a job-1.vib it writes in its own folder, then checks unchanged
    "backupbench run --workload restore /srv/backups/job.vbk /srv/backups/job-1.vib":
        "tests/integration/test_restore_files.py::test_a_restore_reads_each_file_and_changes_nothing",
    # a ramfs it mounts, refused without --buffered
    "backupbench run /mnt/ram":
        "tests/integration/test_run_real.py::test_buffered_run_on_a_filesystem_without_o_direct",
    # a 1 MiB tmpfs it fills
    "backupbench run /tmp/bb-full":
        "tests/reliability/test_hardening_inputs.py::test_a_full_filesystem_names_its_free_space",
    # a tmpfs with 4 inodes, all used
    "backupbench run /tmp/bb-inodes":
        "tests/reliability/test_hardening_inputs.py::test_a_filesystem_without_free_inodes_says_so",
}


def listed() -> dict[str, str]:
    """Every command the tests run, and which test runs it."""
    here = "tests/integration/test_doc_commands_run.py"
    return {**{real.command: f"{here}::test_the_local_commands_run" for real in RUN_HERE},
            **{real.command: f"{here}::test_the_s3_commands_run_against_minio" for real in RUN_ON_MINIO},
            **{real.command: f"{here}::test_the_block_clone_command_runs_on_xfs" for real in RUN_ON_XFS},
            **RUN_ELSEWHERE}
