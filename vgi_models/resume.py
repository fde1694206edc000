"""Resumable denoising: a generate job cut off mid-trajectory goes on from its last saved step.

`Trajectory` wraps a pipeline for a `with` block. After every denoising step it keeps a
snapshot, on the CPU, of everything the rest of the trajectory depends on:
- the loop's tensors (`latents`; LTX-2.3 also `audio_latents`), from the step callback;
- the state of each scheduler the call set up (step index; UniPC's model outputs, last
  sample and order), LTX-2's copy for the audio stream included;
- the generator's state, the checkpoints recorded so far, and the outputs of the stages
  already finished (each pipeline call is a stage: LTX-2.3's two-stage recipe has two).
Wan2.2's active expert follows from the step's timestep, so the step index carries it.

The snapshot is written every `save_every` steps and at once on SIGTERM (SLURM's signal before
a preemption or a time-limit kill: the job then exits) or on `WARNING_SIGNAL` (which the SLURM
profile asks for before the time limit: the job goes on). A write is atomic
(`vgi_models.state.atomic_path`). The file is named by a digest of everything that decides
the video, so a changed setting never resumes it.

A batch job (several instances, weights loaded once) also keeps each finished instance's
files beside its state, in a folder named by the same key (`keep`: hard links, no second
copy on disk): Snakemake removes every output of a batch before it runs it again, and
`restore` puts back those whose key still matches instead of making them again.

A resumed attempt runs the same pipeline code: a finished stage returns its saved output; in
the stage that was cut off, the pipeline's `prepare_<tensor>` results are replaced by the saved
tensors, the schedulers get their saved state back as the loop starts, and the steps already
done are skipped through the pipeline's own `interrupt` check. From there the loop computes
what the uninterrupted run computes.

The state records what its key digests (`decides`): the settings, the approximate runtime
values among them (`vgi_models.runtime`). A state saved under other ones is never continued: the
job starts from step 0 and says which of them changed. An exact runtime value (another exact
attention kernel, compilation, offload) changes rounding only and is continued across.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import io
import logging
import os
import shutil
import signal
import time
from pathlib import Path

import torch

from vgi_models.hooks import Checkpoint, CheckpointRecorder
from vgi_models.state import TEMPORARY, disk_space, remove_state, write_atomic

log = logging.getLogger(__name__)

FORMAT = 1
# Ignored by default, so the shell and the Snakemake process of a SLURM job step, which
# receive it too, live on; SIGUSR1 would end them.
WARNING_SIGNAL = signal.SIGURG


class Trajectory:
    """Saves and resumes the denoising of `pipe` for the duration of a `with` block.

    `path`: the state file (its folder holds nothing else); `loop_tensors`: the names the
    pipeline's loop and step callback use for what the scheduler steps, each made by the
    pipeline's `prepare_<name>`; `schedulers`: the pipeline's schedulers (attribute names), the
    main one first (MiniMax-H3 holds a second one for its audio); `decides`: what the path's
    key digests (recorded in the state, to name what changed when another state is found).
    """

    def __init__(self, pipe, path: Path, generator: torch.Generator, save_every: int,
                 loop_tensors: tuple[str, ...] = ("latents",),
                 schedulers: tuple[str, ...] = ("scheduler",),
                 decides: dict | None = None):  # fmt: skip
        self.pipe, self.path, self.generator = pipe, Path(path), generator
        self.decides = decides or {}
        self.save_every, self.loop_tensors = save_every, loop_tensors
        self.scheduler_names = schedulers
        # HunyuanVideo-1.5's pipeline has no step callback; its loop keeps what the
        # scheduler returns, which is then the one loop tensor
        self.callback = "callback_on_step_end" in inspect.signature(type(pipe).__call__).parameters
        if not self.callback and loop_tensors != ("latents",):
            raise ValueError(f"{type(pipe).__name__} has no step callback to save {loop_tensors}")
        self.key = self.path.stem
        self.saved = None  # the state this attempt resumes
        self.latest = None  # the newest snapshot
        self.written = None  # (stage, step) of the newest write
        self.recorder: CheckpointRecorder | None = None  # set by `track`, before the call
        self.outputs: list[dict] = []  # the finished stages' outputs, as saved
        self.schedulers: list = []  # those the running stage set up, in order
        self.stage, self.step, self.done, self.computed = -1, 0, 0, 0
        self.resuming, self.skipped = False, 0

    # -- the attempt -------------------------------------------------------------------

    def __enter__(self) -> Trajectory:
        self.started = time.perf_counter()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.saved = self._load()
        self.attempts = self.saved["attempts"] if self.saved else []
        self.from_step = self.saved["done"] if self.saved else 0
        self.done = self.from_step
        self._base = type(self.pipe)
        self.pipe.__class__ = self._resumable(self._base)
        self._handlers = {
            signal.SIGTERM: signal.signal(signal.SIGTERM, self._terminated),
            WARNING_SIGNAL: signal.signal(WARNING_SIGNAL, self._warned),
        }
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._handlers.items():
            signal.signal(signum, handler)
        self.pipe.__class__ = self._base

    @property
    def resumed_from_step(self) -> int | None:
        """Steps (over all stages) the saved state had done; None for a fresh start."""
        return self.saved["done"] if self.saved else None

    def record(self) -> list[dict]:
        """Every attempt so far: its first step, its seconds and the steps it computed (an
        attempt cut off counts up to its last save)."""
        return [*self.attempts, self._attempt()]

    def track(self, recorder: CheckpointRecorder) -> None:
        """Make `recorder`'s checkpoints part of the state (restored when resuming)."""
        self.recorder = recorder
        if self.saved:
            recorded = self.saved["recorder"]
            recorder.calls = recorded["calls"]
            recorder.checkpoints = {
                step: Checkpoint(step, c["x0"], c["xt"])
                for step, c in recorded["checkpoints"].items()
            }

    def finish(self) -> None:
        """The job's outputs are complete: the state goes."""
        remove_state(self.path)

    def _attempt(self) -> dict:
        seconds = round(time.perf_counter() - self.started, 3)
        return {"from_step": self.from_step, "seconds": seconds, "steps_computed": self.computed}

    def _load(self) -> dict | None:
        """The state for this key, or None (and a log line) when there is none usable: it is
        discarded only when it is another job's (other settings, an unfinished write) or
        provably not a state (read whole, it does not unpickle: damaged, foreign). A read that
        fails (`OSError`: EIO, permissions, a stale mount) may succeed on a rerun: it stops the
        job and the state stays."""
        for other in self.path.parent.iterdir():
            if other != self.path:
                why = "an unfinished write" if other.suffix == TEMPORARY else self._other(other)
                log.warning("ignoring %s (%s); removed", other, why)
                shutil.rmtree(other) if other.is_dir() else other.unlink()
        if not self.path.exists():
            return None
        try:
            data = self.path.read_bytes()
        except OSError:
            log.error("cannot read %s; it is kept for the next attempt", self.path)
            raise
        try:  # in memory: whatever fails now is the bytes', not the disk's
            state = torch.load(io.BytesIO(data), weights_only=True)
            if state["format"] != FORMAT or state["key"] != self.key:
                raise ValueError("not this job's state")
        except Exception as error:  # a damaged or foreign file: start again
            log.warning("ignoring %s (%s); starting from step 0", self.path, error)
            self.path.unlink()
            return None
        return state

    def _other(self, other: Path) -> str:
        """Why another job's state of this instance is not continued: what it was saved for."""
        try:  # mapped, not read: only the small record is touched
            saved = torch.load(other, mmap=True, weights_only=True)["decides"]
        except Exception:  # an older state, or not a state: unknown settings
            return "saved for other settings"
        ours, theirs = dict(_flat(self.decides)), dict(_flat(saved))
        changed = sorted(
            name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name)
        )
        why = "saved for other settings: " + "; ".join(
            f"{name} {theirs.get(name)!r} -> {ours.get(name)!r}" for name in changed
        )
        if any(name.startswith("settings.runtime") for name in changed):
            why += " (an approximate runtime value changes the trajectory: never continued)"
        return why

    # -- the pipeline, while the block runs -----------------------------------------------

    def _resumable(self, base: type) -> type:
        trajectory = self

        def call(pipe, *args, **kwargs):
            return trajectory._stage(base.__call__, pipe, *args, **kwargs)

        body = {
            "__call__": call,
            "interrupt": property(lambda pipe: pipe._interrupt or trajectory._skipping()),
        }
        if self.callback:
            body["_callback_tensor_inputs"] = [*base._callback_tensor_inputs, *self.loop_tensors]
        for name in self.loop_tensors:
            prepare = getattr(base, f"prepare_{name}")
            body[f"prepare_{name}"] = self._substituting(name, prepare)
        return type(f"Resumable{base.__name__}", (base,), body)

    def _substituting(self, name: str, prepare):
        def substituted(pipe, *args, **kwargs):
            made = prepare(pipe, *args, **kwargs)
            if not self.resuming:
                return made
            fresh = made[0] if isinstance(made, tuple) else made
            saved = self.saved["tensors"][name].to(fresh.device)
            return (saved, *made[1:]) if isinstance(made, tuple) else saved

        return substituted

    def _stage(self, call, pipe, *args, **kwargs):
        self.stage += 1
        if self.saved and self.stage < self.saved["stage"]:  # finished before: its output
            self.outputs.append(self.saved["outputs"][self.stage])
            return _rebuilt(self.outputs[-1], pipe._execution_device)
        self.resuming = bool(self.saved) and self.stage == self.saved["stage"]
        self.step, self.skipped, self.schedulers = 0, 0, []
        bases = {name: type(getattr(pipe, name)) for name in self.scheduler_names}
        for name, base in bases.items():
            getattr(pipe, name).__class__ = type(base.__name__, (base,), self._tracked(base, pipe))
        if self.callback:
            kwargs["callback_on_step_end"] = self._stepped
            kwargs["callback_on_step_end_tensor_inputs"] = list(self.loop_tensors)
        try:
            output = call(pipe, *args, **kwargs)
        finally:
            for name, base in bases.items():
                getattr(pipe, name).__class__ = base
        self.resuming = False
        self.outputs.append({"class": _qualified(type(output)), "fields": _cpu(dict(output))})
        return output

    def _tracked(self, base: type, pipe) -> dict:
        """The stage's scheduler methods: every scheduler set up is tracked (copies too);
        without a step callback, the main one's output is the loop's latents."""
        main = pipe.scheduler

        @functools.wraps(base.set_timesteps)  # pipelines read its signature
        def set_timesteps(scheduler, *args, **kwargs):
            base.set_timesteps(scheduler, *args, **kwargs)
            if not any(known is scheduler for known in self.schedulers):
                self.schedulers.append(scheduler)

        @functools.wraps(base.step)
        def step(scheduler, *args, **kwargs):
            out = base.step(scheduler, *args, **kwargs)
            if scheduler is main:
                latents = out[0] if isinstance(out, tuple) else out.prev_sample
                self._stepped(pipe, self.step, None, {"latents": latents})
            return out

        return {"set_timesteps": set_timesteps} | ({} if self.callback else {"step": step})

    def _skipping(self) -> bool:
        """Read once per loop iteration: skip the steps a resumed stage has done."""
        if not self.resuming:
            return False
        if self.skipped == 0:  # the loop starts: every scheduler of the call is set up
            self._restore()
            self.step = self.saved["step"]
            log.info(
                "resumed at step %d of %d%s", self.step, self.saved["steps"], self._stage_name()
            )
        if self.skipped < self.saved["step"]:
            self.skipped += 1
            return True
        self.resuming = False
        return False

    def _restore(self) -> None:
        states = self.saved["schedulers"]
        if len(states) != len(self.schedulers):
            raise RuntimeError(
                f"{self.path}: {len(states)} schedulers saved, {len(self.schedulers)} now"
            )
        device = self.pipe._execution_device
        for scheduler, state in zip(self.schedulers, states, strict=True):
            for name, value in state.items():
                now = getattr(scheduler, name, None)
                where = now.device if isinstance(now, torch.Tensor) else device
                setattr(scheduler, name, _to(value, where))
        self.generator.set_state(self.saved["generator"])

    def _stepped(self, pipe, i: int, t, tensors: dict) -> dict:
        """The step callback: snapshot the state after step i + 1; write it when due."""
        self.step, self.done, self.computed = i + 1, self.done + 1, self.computed + 1
        recorder = self.recorder
        self.latest = {
            "stage": self.stage,
            "step": self.step,
            "steps": pipe.num_timesteps,
            "done": self.done,
            "tensors": _cpu({name: tensors[name] for name in self.loop_tensors}),
            "schedulers": [_cpu(_scheduler_state(s)) for s in self.schedulers],
            "generator": self.generator.get_state(),
            "recorder": {
                "calls": recorder.calls,
                "checkpoints": {
                    s: {"x0": c.x0, "xt": c.xt} for s, c in recorder.checkpoints.items()
                },
            },
        }
        if self.done % self.save_every == 0:
            self._write()
        return {}

    def _stage_name(self) -> str:
        return f" (stage {self.stage + 1})" if self.stage else ""

    # -- writing ---------------------------------------------------------------------------

    def _write(self, why: str = "") -> None:
        latest = self.latest
        state = latest | {
            "format": FORMAT,
            "key": self.key,
            "decides": self.decides,
            "outputs": self.outputs,
            "attempts": [*self.attempts, self._attempt()],
        }
        with disk_space(self.path, "the resume state"):
            write_atomic(self.path, lambda out: torch.save(state, out))
        self.written = (latest["stage"], latest["step"])
        where = f"step {latest['step']} of {latest['steps']}{self._stage_name()}"
        log.info("saved the state at %s%s", where, f" on {why}" if why else "")

    def _save_latest(self, why: str) -> None:
        latest = self.latest
        if latest and self.written != (latest["stage"], latest["step"]):
            self._write(why)

    def _terminated(self, signum, frame) -> None:
        self._save_latest(signal.Signals(signum).name)
        raise SystemExit(128 + signum)

    def _warned(self, signum, frame) -> None:
        self._save_latest(signal.Signals(signum).name)


def keep(out_dir: Path, names: list[str], kept: Path) -> None:
    """Keep the files `names` of `out_dir` (a folder: its files) in the folder `kept`, as
    hard links (copies where the filesystem has none); `kept` appears whole or not at all."""
    partial = kept.with_name(kept.name + TEMPORARY)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for name in names:
        source = out_dir / name
        if source.is_dir():
            shutil.copytree(source, partial / name, copy_function=_link)
        else:
            _link(source, partial / name)
    shutil.rmtree(kept, ignore_errors=True)
    os.replace(partial, kept)


def restore(kept: Path, out_dir: Path) -> bool:
    """Put the files `keep` kept in `kept` back into `out_dir`; False when none are kept."""
    if not kept.is_dir():
        return False
    for path in sorted(kept.rglob("*")):
        target = out_dir / path.relative_to(kept)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() and os.path.samefile(path, target):
            continue  # (a rename onto the same file would leave the link it renames)
        partial = target.with_name(target.name + TEMPORARY)
        partial.unlink(missing_ok=True)
        _link(path, partial)
        os.replace(partial, target)
    return True


def _link(source, target) -> None:
    try:
        os.link(source, target)
    except OSError:  # another filesystem, or one without hard links
        shutil.copy2(source, target)


def _flat(tree: dict, prefix: str = ""):
    """(dotted name, value) of every leaf of a nested dict."""
    for name, value in tree.items():
        if isinstance(value, dict) and value:
            yield from _flat(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def _scheduler_state(scheduler) -> dict:
    """What a scheduler holds besides its config: the schedule and the solver's memory."""
    return {k: v for k, v in vars(scheduler).items() if k != "_internal_dict"}


def _to(value, device, copy: bool = False):
    """`value` with every tensor on `device` (lists, tuples and dicts followed); `copy`: a
    copy even of a tensor already there (a snapshot the pipeline cannot change)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to(device, copy=copy)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device, copy) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device, copy) for k, v in value.items()}
    return value


def _cpu(value):
    """A snapshot of `value` on the CPU."""
    return _to(value, "cpu", copy=True)


def _qualified(kind: type) -> str:
    return f"{kind.__module__}:{kind.__qualname__}"


def _rebuilt(saved: dict, device):
    module, name = saved["class"].split(":")
    kind = getattr(importlib.import_module(module), name)
    return kind(**{k: _to(v, device) for k, v in saved["fields"].items()})
