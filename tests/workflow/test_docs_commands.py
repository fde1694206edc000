"""Every `snakemake ...` and `python -m ...` command of README.md and docs/*.md runs as written.

Commands come from the bash code blocks (line continuations joined, `&&`/`;`/`|` chains split,
heredoc bodies skipped) and from inline code spans that start with one. Each runs on the
bundled example in its own temporary copy of the repository (nothing lands in the checkout):
a snakemake command that would run jobs must name its cores, as a real run must, and then
runs as a dry run (`-n` added); the others run as written. A command whose block exports an
API key variable, or whose config names one (`api_key_env: X`), gets a dummy key; every
other command runs with those variables unset. A command that cannot run on the bare
example is listed below with its reason: not run at all, or run and expected to stop with
the message saying what it lacks.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from tests.support.workflow import REPO, snakemake_cli

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Not run here, with the reason.
NOT_RUN = {
    "python -m pytest": "the whole test suite, this test included",
    "python -m pytest -n 0 tests/study/test_time_left.py": "a module of this suite: it runs there",
    "python -m venv .venv": "the install's environment (tests/workflow/test_install.py makes one)",
    "python -m http.server -d results": "serves a finished run's folder until stopped",
    "snakemake --cores 8 --config 'benchmark={root: VGI-Bench/bench_data, taxonomy: "
    "VGI-Bench/task_names.yaml}'": "needs the downloaded release (VGI-Bench/); "
    "test_reruns runs it with the bundled example in its place",
}
# Run as written on the bare example; each must stop with the message naming what it lacks.
NEEDS = {
    "snakemake --report report.zip": "marked for report but does not exist",
    "snakemake plan --cores 1 --configfile config/paper.yaml": (
        "benchmark: root is not a folder (data/VGI-Bench/bench_data)"
    ),
    "snakemake --profile slurm --configfile config/paper.yaml": (
        "benchmark: root is not a folder (data/VGI-Bench/bench_data)"
    ),
    "snakemake --cores 2 judge_reliability": "judge_reliability needs human preferences",
    "snakemake --cores 2 --config 'judge={official_prompts: ../VGI-Bench}'": (
        "judge.official_prompts: cannot read ../VGI-Bench/eval/vlm_judge_utils.py"
    ),
    "snakemake --cores 8 --resources judge_api=2 --configfile config/published.yaml": (
        "videos folder not found (data/VGI-Bench/eval_res/video_model_res/seedance2_0)"
    ),
    "python -m workflow_scripts.annotate --labels labels/human.csv --sample 117 --seed 0": (
        "no decoded checkpoint pairs under results: run generate first"
    ),
    "python -m workflow_scripts.annotate preferences --annotator ann1 --rankings rankings "
    "--annotators ann1,ann2,ann3,ann4 --per-triplet 2 --triplets 300 --seed 0": (
        "no triplets: an instance needs videos of three models"
    ),
    "python -m workflow_scripts.annotate preferences --annotator me --configfile "
    "config/preferences_tiny.yaml": "no triplets: an instance needs videos of three models",
    "snakemake --cores 2 judge_reliability --configfile config/preferences_tiny.yaml": (
        "judge_reliability needs human preferences"
    ),
    "snakemake --cores 1 results/cogvideox_check/maze_square/maze_square_lv1_001/video.mp4 "
    "--config 'models=[cogvideox_check]' 'denoise={steps: [1, 2, 4]}'": (
        "models: 'cogvideox_check' is not in the model registry"  # the user's entry
    ),
}
# Options with which snakemake runs no job.
NO_JOBS = {
    *("-n", "--dry-run", "--dryrun", "--dag", "--rulegraph", "--filegraph", "--d3dag"),
    *("--unlock", "--report", "--lint", "-l", "--list", "--list-rules", "--list-target-rules"),
    *("-S", "--summary", "-D", "--detailed-summary", "--version", "-v", "-h", "--help"),
}
CORES = re.compile(r"(--cores|--jobs|-c|-j|--profile|--executor|-e)(=?.+)?")
SPLIT = {"&&", "||", ";", "|"}
REDIRECT = {">", ">>", "<", "2>", "&>"}
INLINE = re.compile(r"`((?:snakemake|python -m) [^`]+)`")
# What a copy of the checkout leaves out: version control, caches, outputs of earlier runs.
LEFT_OUT = shutil.ignore_patterns(
    *(".git", ".venv", ".snakemake", "results*", "__pycache__", ".*_cache", "build", "*.egg-info"),
    *("*.svg", "*.zip"),
)
HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)")


@dataclass
class Command:
    argv: list[str]
    keys: set[str] = field(default_factory=set)  # API key variables it is given (dummies)
    where: set[str] = field(default_factory=set)

    @property
    def text(self) -> str:
        return shlex.join(self.argv)


def _commands(line: str) -> list[list[str]]:
    """The snakemake / python -m commands of one shell line (chains split, redirects cut)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    found, current = [], []
    for token in [*lexer, ";"]:
        if token in SPLIT:
            cut = next((i for i, t in enumerate(current) if t in REDIRECT), len(current))
            argv = current[:cut]
            if argv[:1] == ["snakemake"] or argv[:2] == ["python", "-m"]:
                found.append(argv)
            current = []
        else:
            current.append(token)
    return found


def _blocks(text: str):
    """(shell lines, exported variables) per bash block, then the prose's inline commands."""
    inline, block, language = [], None, None
    for line in text.splitlines():
        if line.startswith("```"):
            if block is None:
                block, language = [], line[3:].strip()
            else:
                if language in ("bash", "sh", "shell"):
                    yield block
                block = None
        elif block is not None:
            block.append(line)
        else:
            inline += INLINE.findall(line)
    yield inline


def _logical_lines(lines: list[str]) -> list[str]:
    joined, heredoc, pending = [], None, ""
    for line in lines:
        if heredoc:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        pending += line.rstrip("\\") + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(pending)
            if match := HEREDOC.search(pending):
                heredoc = match[1]
            pending = ""
    return joined


def documented_commands() -> dict[str, Command]:
    """Every command of the documentation, by its text."""
    commands: dict[str, Command] = {}
    for path in DOCS:
        for lines in _blocks(path.read_text(encoding="utf-8")):
            exported = set(re.findall(r"^\s*export (\w+)=", "\n".join(lines), re.M))
            for line in _logical_lines(lines):
                for argv in _commands(line):
                    named = set(re.findall(r"api_key_env: (\w+)", " ".join(argv)))
                    command = commands.setdefault(shlex.join(argv), Command(argv))
                    command.keys |= exported | named
                    command.where.add(path.relative_to(REPO).as_posix())
    return commands


COMMANDS = documented_commands()
KEY_VARIABLES = {"GEMINI_API_KEY"} | {k for c in COMMANDS.values() for k in c.keys}


def _would_run_jobs(argv: list[str]) -> bool:
    return argv[0] == "snakemake" and not NO_JOBS & set(argv)


def _names_cores(argv: list[str]) -> bool:
    return any(CORES.fullmatch(word) for word in argv[1:])


def _run(command: Command, tmp_root, environ: dict[str, str]) -> subprocess.CompletedProcess | str:
    """Run `command` in a fresh copy of the repository, with `environ` (no key variables)
    and its dummy keys: the result, or why it did not run. A `snakemake` command runs
    through Snakemake's command line in this process (the console script's own entry), a
    `python -m` one as a child process."""
    argv = list(command.argv)
    if _would_run_jobs(argv):
        if not _names_cores(argv):
            return "Error: cores have to be specified for local execution (as a real run stops)"
        argv.insert(1, "-n")
    copy = tmp_root / re.sub(r"\W+", "_", command.text)[:80]
    shutil.copytree(REPO, copy, ignore=LEFT_OUT)
    env = environ | {key: "dummy-key-for-a-dry-run" for key in command.keys}
    if argv[0] == "snakemake":
        return snakemake_cli(argv[1:], cwd=copy, env=env)
    return subprocess.run(
        [sys.executable, *argv[1:]], cwd=copy, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every runnable command's outcome: the `python -m` ones two at a time (each is a
    separate process), the `snakemake` ones meanwhile, one after another, here. The
    environment is read once, before: a run here sets its own while the children start."""
    root = tmp_path_factory.mktemp("docs_commands")
    environ = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    runnable = {text: c for text, c in COMMANDS.items() if text not in NOT_RUN}
    children = {text: c for text, c in runnable.items() if c.argv[0] != "snakemake"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = {text: pool.submit(_run, c, root, environ) for text, c in children.items()}
        done = {t: _run(c, root, environ) for t, c in runnable.items() if t not in children}
        return done | {text: future.result() for text, future in started.items()}


def test_the_documentation_has_commands_and_the_lists_are_current():
    assert len(COMMANDS) >= 15
    stale = (NOT_RUN.keys() | NEEDS.keys()) - COMMANDS.keys()
    assert not stale, f"listed here but no longer documented: {sorted(stale)}"


# NOT_RUN's commands are not parametrized (listed with their reason, kept current above).
@pytest.mark.parametrize("text", sorted(COMMANDS.keys() - NOT_RUN.keys()))
def test_documented_command_runs_as_written(text, outcomes):
    command = COMMANDS[text]
    result = outcomes[text]
    where = f"{text!r} in {', '.join(sorted(command.where))}"
    assert not isinstance(result, str), f"{where}: {result}"
    output = result.stdout + result.stderr
    if text in NEEDS:
        assert result.returncode != 0 and NEEDS[text] in output, f"{where}:\n{output[-3000:]}"
    else:
        assert result.returncode == 0, f"{where} failed:\n{output[-3000:]}"
