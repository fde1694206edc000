"""The locks (requirements/cpu.txt, gpu.txt) and the stages' conda envs (envs/*.yaml) against
pyproject.toml.

Each lock pins every project dependency, its extra's included (test for the CPU lock, gpu for
the GPU lock), at a version pyproject's specifier admits, and the two agree on every package
they share (torch up to its build label). Every pip entry of an env is an exact pin of a
project dependency at the CPU lock's version: the versions the tests ran. Each env holds the
project dependencies its stage's entry scripts import. Nothing here reads which versions this
machine has installed.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.support.workflow import REPO

tomllib = pytest.importorskip("tomllib")

ENVS = sorted((REPO / "envs").glob("*.yaml"))
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PROJECT = {canonicalize_name(r.name): r for r in map(Requirement, PYPROJECT["dependencies"])}
EXTRAS = {
    extra: [Requirement(r) for r in PYPROJECT["optional-dependencies"][extra]]
    for extra in ("test", "gpu")
}
# A lock entry: `name==version \` at the start of a line (its hashes and `# via` follow).
LOCKED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", re.MULTILINE)
# A `script:` rule's env and entry script (the rules' own lines, e.g. `"../envs/judge.yaml"`).
RULE = re.compile(r"^rule \w+:\n(?:(?!rule ).*\n)*", re.MULTILINE)
CONDA = re.compile(r'conda:\s+"\.\./(envs/\w+\.yaml)"')
SCRIPT = re.compile(r'script:\s+"\.\./(workflow_scripts/entry/\w+\.py)"')


def dependencies(env) -> list:
    return yaml.safe_load(env.read_text(encoding="utf-8"))["dependencies"]


def pins(env) -> list[Requirement]:
    return [
        Requirement(line) for d in dependencies(env) if isinstance(d, dict) for line in d["pip"]
    ]


def pinned_version(requirement: Requirement) -> Version | None:
    """The version of an exact `name==version` pin, else None."""
    specs = list(requirement.specifier)
    if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
        return Version(specs[0].version)
    return None


def locked(lock: str) -> dict[str, Version]:
    text = (REPO / "requirements" / f"{lock}.txt").read_text(encoding="utf-8")
    return {canonicalize_name(name): Version(version) for name, version in LOCKED.findall(text)}


LOCKS = {"cpu": (locked("cpu"), "test"), "gpu": (locked("gpu"), "gpu")}
LOCK = LOCKS["cpu"][0]


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_the_lock_pins_every_project_dependency_within_its_specifier(lock):
    """Torch's CPU build (`+cpu`) is the release its specifier names."""
    versions, extra = LOCKS[lock]
    assert len(versions) > len(PROJECT), "the lock holds the transitive dependencies too"
    problems = []
    for requirement in [*PROJECT.values(), *EXTRAS[extra]]:
        version = versions.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement}: not in requirements/{lock}.txt")
        elif not requirement.specifier.contains(Version(version.public), prereleases=True):
            problems.append(f"{requirement}: requirements/{lock}.txt has {version}")
    assert not problems, "\n".join(problems)


def test_the_locks_agree_on_what_they_share():
    """The GPU lock is the CPU lock's study packages on torch's CUDA build, with xformers."""
    cpu, gpu = LOCKS["cpu"][0], LOCKS["gpu"][0]
    assert cpu["torch"].local == "cpu" and gpu["torch"].local is None
    differ = [
        f"{name}: cpu.txt {cpu[name]}, gpu.txt {gpu[name]}"
        for name in sorted(cpu.keys() & gpu.keys())
        if cpu[name].public != gpu[name].public
    ]
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_every_pin_is_a_project_dependency_that_admits_it(env):
    problems = []
    for pin in pins(env):
        version, name = pinned_version(pin), canonicalize_name(pin.name)
        project = PROJECT.get(name)
        if version is None:
            problems.append(f"{pin}: not an exact pin (name==version)")
        elif project is None:
            problems.append(f"{pin}: not a dependency in pyproject.toml")
        elif not project.specifier.contains(version, prereleases=True):
            problems.append(f"{pin}: pyproject.toml asks for {project}")
        if project is not None and pin.extras != project.extras:
            problems.append(f"{pin}: extras differ from pyproject.toml's {project}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_pins_are_the_lock_versions(env):
    """A local label (torch's `+cpu`) is a build of the same release."""
    differ = [
        f"{pin}: requirements/cpu.txt has {version}"
        for pin in pins(env)
        if (version := LOCK.get(canonicalize_name(pin.name))) is None
        or pinned_version(pin) != Version(version.public)
    ]
    assert not differ, "\n".join(differ)


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_python_is_one_the_project_supports(env):
    python = [d for d in dependencies(env) if isinstance(d, str) and d.startswith("python=")]
    assert len(python) == 1
    assert SpecifierSet(PYPROJECT["requires-python"]).contains(python[0].split("=")[1])


def stage_scripts() -> dict[str, set[str]]:
    """The entry scripts of the `script:` rules, by the env they run in."""
    scripts: dict[str, set[str]] = {}
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for rule in RULE.finditer(smk.read_text(encoding="utf-8")):
            conda, script = CONDA.search(rule[0]), SCRIPT.search(rule[0])
            if conda and script:
                scripts.setdefault(conda[1], set()).add(script[1])
    return scripts


def imported_distributions(scripts: set[str]) -> set[str]:
    """The project dependencies loaded by importing the scripts' workflow modules (what every
    job of the stage imports before it runs), in a fresh interpreter."""
    modules = set()
    for script in scripts:
        for node in ast.parse((REPO / script).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                modules |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module)
    code = "import json, sys\nbefore = set(sys.modules)\n"
    code += "".join(f"import {m}\n" for m in sorted(modules))
    code += "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    providers = importlib.metadata.packages_distributions()
    return {
        canonicalize_name(dist)
        for module in json.loads(result.stdout)
        for dist in providers.get(module, [])
        if canonicalize_name(dist) in PROJECT
    }


STAGES = stage_scripts()


def test_the_script_rules_name_the_envs():
    """The rules are read: the VLM and analysis stages' scripts are found, in existing envs
    (`generate`, a shell rule, runs in envs/inference.yaml)."""
    envs = {str(env.relative_to(REPO)) for env in ENVS}
    assert {"envs/analysis.yaml", "envs/judge.yaml"} <= set(STAGES) <= envs


@pytest.mark.parametrize("env", sorted(STAGES))
def test_each_env_holds_the_dependencies_its_scripts_import(env):
    pinned = {canonicalize_name(pin.name) for pin in pins(REPO / env)}
    missing = sorted(imported_distributions(STAGES[env]) - pinned)
    assert not missing, f"{env} lacks {', '.join(missing)}, which its scripts import"
