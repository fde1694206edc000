"""A real single-node SLURM on loopback for tests: munged, slurmctld, slurmd, two fake GPUs,
the partitions `cpu` and `gpu` that slurm/config.yaml names.

Needs root and the Debian packages (`.ci/run` installs them; without them the tests fail,
never skip). Every daemon runs in the foreground as a child of this process, on free
loopback ports, with its state, logs and munge socket in a temporary directory. The
config goes to the default path /etc/slurm/slurm.conf (the jobstep plugin strips
SLURM_CONF before its nested `srun`); a file already there is put back at teardown.

The GPUs are character devices like /dev/null (`gres.conf File=`), so SLURM sets
CUDA_VISIBLE_DEVICES for GPU jobs; a TaskProlog appends `job step CUDA_VISIBLE_DEVICES`
of every task to `tasks.log`, what SLURM itself gave each task.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

ETC = Path("/etc/slurm")
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "sinfo", "scontrol", "scancel")
INSTALL = "apt-get install -y --no-install-recommends slurm-wlm slurmctld slurmd slurm-client munge"

CLUSTER = "vgitest"
SLURM_CONF = """\
ClusterName={cluster}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge/socket
SlurmUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
MpiDefault=none
MailProg=/bin/true
TaskPlugin=task/none
TaskProlog={dir}/task_prolog.sh
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
MinJobAge=300
ReturnToService=2
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=localhost MaxTime=INFINITE State=UP
"""

TASK_PROLOG = """\
#!/bin/sh
echo "$SLURM_JOB_ID $SLURM_STEP_ID ${{CUDA_VISIBLE_DEVICES:-none}}" >> {dir}/tasks.log
"""


@dataclass
class Cluster:
    """The running cluster: its folder (state, logs, fake GPUs) and a way to ask it."""

    dir: Path

    @property
    def tasks_log(self) -> Path:
        return self.dir / "tasks.log"

    def run(self, *command: str) -> str:
        """A SLURM client command's stdout (it reads /etc/slurm/slurm.conf)."""
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _check_host() -> None:
    missing = [name for name in DAEMONS + CLIENTS if not shutil.which(name)]
    if missing:
        pytest.fail(f"SLURM binaries missing ({', '.join(missing)}): run `{INSTALL}` as root")
    if os.geteuid() != 0:
        pytest.fail("the test SLURM cluster starts munged, slurmctld and slurmd: run as root")


def _write_config(folder: Path) -> None:
    (folder / "munge").mkdir(mode=0o755)
    shutil.chown(folder / "munge", "munge", "munge")
    key = folder / "munge" / "munged.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    shutil.chown(key, "munge", "munge")
    for name in ("state", "spool", "gpus"):
        (folder / name).mkdir()
    for index in range(2):
        os.mknod(folder / "gpus" / f"nvidia{index}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    prolog = folder / "task_prolog.sh"
    prolog.write_text(TASK_PROLOG.format(dir=folder))
    prolog.chmod(0o755)
    ports = {"ctld_port": _free_port(), "slurmd_port": _free_port()}
    conf = SLURM_CONF.format(cluster=CLUSTER, dir=folder, **ports)
    (ETC / "slurm.conf").write_text(conf)
    (ETC / "gres.conf").write_text(f"Name=gpu File={folder}/gpus/nvidia[0-1]\n")


def _log_tail(folder: Path, name: str, lines: int = 15) -> str:
    logs = [folder / f"{name}.log", folder / f"{name}.out", folder / "munge" / f"{name}.log"]
    text = "".join(path.read_text(errors="replace") for path in logs if path.exists())
    return "\n".join(text.splitlines()[-lines:])


def _wait_idle(cluster: Cluster, daemons: dict, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        for name, process in daemons.items():
            if process.poll() is not None:
                tail = _log_tail(cluster.dir, name)
                pytest.fail(f"{name} exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(subprocess.CalledProcessError):
            state = " ".join(sorted(set(cluster.run("sinfo", "-h", "-o", "%T").split())))
            if state == "idle":  # in both partitions
                return
        time.sleep(0.2)
    tail = _log_tail(cluster.dir, "slurmd")
    pytest.fail(
        f"the test SLURM node is {state or 'unknown'}, not idle, after {timeout} s:\n{tail}"
    )


@contextlib.contextmanager
def _config_files():
    """Back up /etc/slurm/{slurm,gres}.conf for the test; put them back (or remove) after."""
    saved = {}
    for name in ("slurm.conf", "gres.conf"):
        path = ETC / name
        saved[path] = path.read_bytes() if path.exists() else None
    try:
        yield
    finally:
        for path, content in saved.items():
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(content)


def _stop(daemons: dict) -> None:
    """Cancel every job and let slurmd end their steps, then stop the daemons in reverse order."""
    if "slurmctld" in daemons and daemons["slurmctld"].poll() is None:
        subprocess.run(["scancel", "--full", "--user", "root"], capture_output=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            squeue = subprocess.run(["squeue", "-h", "-t", "R,CG"], capture_output=True)
            if squeue.returncode or not squeue.stdout:
                break
            time.sleep(0.5)
    for process in reversed(daemons.values()):
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    _kill_left_behind()


def _kill_left_behind() -> None:
    """Kill what this cluster's jobs left running: proctrack/linuxproc follows a job's
    processes by their parents, so one that outlived its parent (a batch script's Snakemake
    hung on the SIGTERM of a requeue) escapes scancel; a cgroup-tracked cluster kills it."""
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get("SLURM_CLUSTER_NAME") == CLUSTER:
                process.kill()


def _start(daemons: dict, folder: Path, command: list[str], **popen) -> None:
    with open(folder / f"{command[0]}.out", "wb") as out:
        daemons[command[0]] = subprocess.Popen(command, stdout=out, stderr=out, **popen)


@contextlib.contextmanager
def running_cluster():
    """Start the cluster, wait for an idle node, yield a `Cluster`; stop all at exit."""
    _check_host()
    folder = Path(tempfile.mkdtemp(prefix="vgi-slurm-"))
    folder.chmod(0o755)  # munged (as the munge user) reaches its socket directory
    cluster, daemons = Cluster(folder), {}
    with _config_files():
        try:
            _write_config(folder)
            sock = folder / "munge"
            munged = ["munged", "--foreground", f"--socket={sock}/socket"]
            munged += [
                f"--{name}-file={sock}/munged.{name}" for name in ("key", "pid", "log", "seed")
            ]
            _start(daemons, folder, munged, user="munge", group="munge")
            while not (sock / "socket").exists() and daemons["munged"].poll() is None:
                time.sleep(0.05)
            _start(daemons, folder, ["slurmctld", "-D"])
            _start(daemons, folder, ["slurmd", "-D", "-N", "localhost"])
            _wait_idle(cluster, daemons)
            yield cluster
        finally:
            _stop(daemons)
            shutil.rmtree(folder, ignore_errors=True)
