"""A fork server for the VLM jobs' entry points: the SDKs are imported once, not per job.

A judge or transition job spends most of its CPU importing google-genai, decord and the
protocol, and a study has thousands of such jobs on the submit host. `run(target, argv)`
(stdlib only, cheap to import) hands the job to a server process that has imported
`PRELOAD` and forks one child per job: the child takes the job's working directory,
environment (the API key too: it travels over a private Unix socket, never to a file),
stdout and stderr (the job's log), runs `target(argv)` and its exit status becomes the
job's. Each job is still its own process, with its own event loop and client. The child
dies with the job's process (Snakemake killing a job kills its calls). The server starts
with the first job, is keyed by the interpreter and the code's files (an edit starts a
new one), listens in a folder of the user's own, and exits after IDLE_S without jobs.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CODE = (PACKAGE, PACKAGE.parent / "vgi_models")  # what the jobs run: an edit starts a new server
PRELOAD = (
    "workflow_scripts.jobs",
    "workflow_scripts.transitions",
    "workflow_scripts.judge.client",
    "workflow_scripts.judge.protocol",
    "workflow_scripts.judge.gemini",
    "workflow_scripts.judge.openai_compatible",
    "decord",
)
IDLE_S = 30.0
START_TIMEOUT_S = 60.0


def address() -> Path:
    """The server's socket: private to the user, keyed by the interpreter and the code."""
    files = [p for package in CODE for p in package.rglob("*.py")]
    code = sorted((str(p), p.stat().st_mtime_ns) for p in files)
    key = hashlib.sha256(json.dumps([sys.executable, code]).encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"vgi-forkserver-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise RuntimeError(f"{folder} must be yours alone (mode 700): the jobs' keys pass there")
    return folder / f"{key}.sock"


def run(target: str, argv: list[str]) -> None:
    """Runs `target` ("module:function") on `argv` in a child of the server; exits with its
    status."""
    try:
        connection = _connect(address())
    except (OSError, RuntimeError) as error:  # the job still runs, and its log says why
        print(f"fork server unavailable ({error}); the job runs unforked", file=sys.stderr)
        module, function = target.split(":")
        getattr(importlib.import_module(module), function)(argv)
        return
    request = {"target": target, "argv": argv, "argv0": sys.argv[0], "cwd": os.getcwd()}
    data = json.dumps({**request, "env": dict(os.environ)}).encode()
    sys.stdout.flush()
    sys.stderr.flush()
    socket.send_fds(connection, [len(data).to_bytes(8, "big")], [1, 2])
    connection.sendall(data)
    status = connection.recv(4)
    sys.exit(int.from_bytes(status, "big", signed=True) if len(status) == 4 else 1)


def _connect(path: Path) -> socket.socket:
    """A connection to the server at `path`; if none answers, one job (under a lock)
    starts it while the others wait."""
    if connection := _try(path):
        return connection
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if connection := _try(path):
            return connection
        command = [sys.executable, "-m", "workflow_scripts.forkserver", str(path)]
        devnull = subprocess.DEVNULL
        server = subprocess.Popen(
            command,
            cwd=PACKAGE.parent,
            stdin=devnull,
            stdout=devnull,
            stderr=devnull,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (connection := _try(path)):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the fork server at {path} did not start")
            time.sleep(0.02)
        return connection


def _try(path: Path) -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX)
    try:
        connection.connect(str(path))
        return connection
    except (FileNotFoundError, ConnectionRefusedError):
        connection.close()
        return None


def serve(path: Path) -> None:
    """Imports PRELOAD, then forks a child per job until IDLE_S pass without one."""
    for module in PRELOAD:
        importlib.import_module(module)
    listener = socket.socket(socket.AF_UNIX)
    path.unlink(missing_ok=True)  # a dead server's (jobs start servers one at a time)
    listener.bind(str(path))
    listener.listen(128)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the system
    listener.settimeout(IDLE_S)
    _fork_each(listener, until=TimeoutError)
    path.unlink()  # no new job reaches this server now; serve those already queued
    listener.setblocking(False)
    _fork_each(listener, until=BlockingIOError)


def _fork_each(listener: socket.socket, until: type[OSError]) -> None:
    """Forks a child for each job that connects, until accepting one raises `until`."""
    while True:
        try:
            connection = listener.accept()[0]
        except until:
            return
        _fork(listener, connection)


def _fork(listener: socket.socket, connection: socket.socket) -> None:
    if os.fork() == 0:
        listener.close()
        connection.settimeout(None)
        _child(connection)
    connection.close()


def _child(connection: socket.socket) -> None:
    """Becomes the job: its directory, environment, stdout and stderr; never returns."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    status = 1
    try:
        head, fds, _, _ = socket.recv_fds(connection, 8, 2)
        size = int.from_bytes(head, "big")
        data = b""
        while len(data) < size:
            data += connection.recv(size - len(data))
        request = json.loads(data)
        for fd, stream in zip(fds, (1, 2), strict=True):
            os.dup2(fd, stream)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        threading.Thread(target=_die_with_job, args=(connection,), daemon=True).start()
        module, function = request["target"].split(":")
        sys.argv = [request["argv0"], *request["argv"]]
        try:
            getattr(importlib.import_module(module), function)(request["argv"])
            status = 0
        except SystemExit as done:
            status = done.code if isinstance(done.code, int) else 1
            if done.code is not None and not isinstance(done.code, int):
                print(done.code, file=sys.stderr)
    except BaseException:  # the job's traceback goes to its log, as it would unforked
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            connection.sendall(status.to_bytes(4, "big", signed=True))
        finally:
            os._exit(status)


def _die_with_job(connection: socket.socket) -> None:
    """Ends this child when the job's process goes (its end of the socket closes)."""
    connection.recv(1)
    os._exit(1)


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
