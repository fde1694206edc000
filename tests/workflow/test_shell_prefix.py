"""The shell prefix of every shell rule: the generate job's variables, after bash's strict mode
(Snakemake's own prefix, which any `shell.prefix` replaces)."""

from __future__ import annotations

import subprocess

import yaml
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
from snakemake.shell import shell

from tests.support.workflow import REPO, default_config


def test_shell_rules_run_in_strict_mode_with_the_generate_variables(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(default_config(tmp_path)), encoding="utf-8")
    with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
        api.workflow(
            snakefile=REPO / "Snakefile",
            workdir=tmp_path,
            config_settings=ConfigSettings(configfiles=[path]),
            resource_settings=ResourceSettings(cores=1),
        ).dag()
        prefix = shell._process_prefix
    failing_pipe = subprocess.run(["bash", "-c", f"{prefix} false | true"], capture_output=True)
    assert failing_pipe.returncode != 0
    unset = subprocess.run(["bash", "-c", f"{prefix} echo $NO_SUCH_VARIABLE"], capture_output=True)
    assert unset.returncode != 0
    exported = subprocess.run(
        ["bash", "-c", f'{prefix} echo "$VGI_SAVE_EVERY"'], capture_output=True, text=True
    )
    assert exported.stdout.strip() == "5"
