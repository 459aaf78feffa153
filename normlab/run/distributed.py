"""Data-parallel training across processes (torchrun, or SLURM tasks): setup, sharding, rank 0 I/O.

Design: every rank builds the same global batch sequence (``task.train_batches`` is a pure function
of (epoch, seed)) and takes a contiguous slice of each batch. The loss of rank r is weighted by
``world * units_r / units_total`` so that DDP's gradient *average* equals the gradient of the
global-batch mean, i.e. N processes follow the same trajectory as one process (up to float
summation order). Only rank 0 touches the run directory; it broadcasts what the others need
(decisions, errors, the checkpoint) as bytes, so no shared filesystem is required and nothing is
ever unpickled.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
import torch.distributed as dist


@dataclass
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    group: Any = None  # gloo group for small CPU messages (None = the default group)

    @property
    def enabled(self) -> bool:
        return self.world > 1

    @property
    def main(self) -> bool:
        return self.rank == 0


_CTX: Optional[Dist] = None


def launcher_env(env: dict) -> dict:
    """torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT) for processes that
    another launcher started, unless torchrun already set them:

    - Hydra's submitit launcher with ``hydra.launcher.tasks_per_node`` > 1 (SLURM or local):
      submitit's JobEnvironment knows the ranks and the job's first host;
    - a bare ``srun`` job step: SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, the master being the node
      that launched the step (the allocation's first node).

    The port is derived from the job id, so that two jobs sharing a node do not collide.
    """
    if "WORLD_SIZE" in env:
        return {}
    if env.get("SUBMITIT_EXECUTOR"):
        try:
            from submitit import JobEnvironment

            job = JobEnvironment()
            ranks = (
                job.global_rank,
                job.num_tasks,
                job.local_rank,
                job.hostnames[0],
                str(job.job_id),
            )
        except Exception:  # not inside a submitit job after all
            ranks = None
    elif int(env.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in env:
        ranks = (
            env["SLURM_PROCID"],
            env["SLURM_NTASKS"],
            env.get("SLURM_LOCALID", "0"),
            env.get("SLURM_LAUNCH_NODE_IPADDR", "127.0.0.1"),
            env.get("SLURM_JOB_ID", "0"),
        )
    else:
        ranks = None
    if ranks is None or int(ranks[1]) <= 1:
        return {}
    rank, world, local, master, job_id = ranks
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(world),
        "LOCAL_RANK": str(local),
        "MASTER_ADDR": env.get("MASTER_ADDR", master),
        "MASTER_PORT": env.get("MASTER_PORT", str(20000 + zlib.crc32(job_id.encode()) % 20000)),
    }


def check_device(name) -> None:
    """ConfigError unless ``device=name`` names a device this machine has (before anything runs)."""
    from ..errors import ConfigError

    if name in ("auto", "cpu"):
        return
    try:
        dev = torch.device(str(name))
    except (RuntimeError, ValueError):
        raise ConfigError(
            f"device={name!r}: not a device name; use auto, cpu, cuda or cuda:N"
        ) from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            why = (
                "this torch is built without CUDA"
                if torch.version.cuda is None
                else "no CUDA device is visible"
            )
            raise ConfigError(
                f"device={name}: {why}; use device=cpu, or device=auto (a GPU when there is one)"
            )
        if dev.index is not None and dev.index >= n:
            raise ConfigError(
                f"device={name}: this machine has {n} CUDA device(s), cuda:0 to cuda:{n - 1}"
            )
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ConfigError(
                f"device={name}: MPS is not available here; use device=cpu or device=auto"
            )
    elif dev.type != "cpu":
        raise ConfigError(f"device={name}: normlab runs on auto, cpu, cuda or cuda:N")


def pick_device(name: str) -> torch.device:
    check_device(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def init(device: str = "auto") -> Dist:
    """The process's place in the job; initialises the process group once per process (a Hydra
    sweep under torchrun runs its jobs one after another in the same group)."""
    global _CTX
    if _CTX is not None:
        return _CTX
    check_device(device)
    os.environ.update(launcher_env(dict(os.environ)))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist(device=pick_device(device))
    rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    cuda = device != "cpu" and torch.cuda.is_available()
    dev = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    # A generous timeout: rank 0 alone preprocesses data and evaluates while others wait.
    timeout = datetime.timedelta(minutes=int(os.environ.get("NORMLAB_DIST_TIMEOUT_MIN", "60")))
    dist.init_process_group(
        "nccl" if cuda else "gloo", timeout=timeout, device_id=dev if cuda else None
    )
    group = dist.new_group(backend="gloo", timeout=timeout) if cuda else None
    _CTX = Dist(rank, world, local, dev, group)
    return _CTX


def shard(batch: Any, rank: int, world: int) -> tuple[Any, bool]:
    """Rank ``rank``'s contiguous slice along dim 0 of every tensor in ``batch``.

    A rank whose slice would be empty (a batch smaller than the world) gets the first example
    and ``False``: it runs forward/backward with weight 0, because DDP needs every rank's backward.
    """
    n = _first_len(batch)
    if n is None:
        raise TypeError("distributed training needs batches with tensors (batch-first)")
    if n >= world:
        lo, hi, real = rank * n // world, (rank + 1) * n // world, True
    else:
        real = rank < n
        lo, hi = (rank, rank + 1) if real else (0, 1)

    def cut(x):
        if torch.is_tensor(x) and x.dim() > 0 and x.shape[0] == n:
            return x[lo:hi]
        if isinstance(x, dict):
            return {k: cut(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(cut(v) for v in x)
        return x

    return cut(batch), real


def _first_len(batch: Any) -> Optional[int]:
    if torch.is_tensor(batch) and batch.dim() > 0:
        return batch.shape[0]
    items = (
        batch.values()
        if isinstance(batch, dict)
        else batch
        if isinstance(batch, (list, tuple))
        else ()
    )
    for v in items:
        n = _first_len(v)
        if n is not None:
            return n
    return None


def global_loss(ctx: Dist, loss: torch.Tensor, units: float) -> tuple[float, float]:
    """(mean loss over all ranks' units, total units): one all-reduce and one host sync per step."""
    weighted = loss.detach().double() * units if units else loss.new_zeros((), dtype=torch.float64)
    stats = torch.stack([weighted, loss.new_tensor(units, dtype=torch.float64)])
    dist.all_reduce(stats)
    total_loss, total_units = stats.tolist()
    return total_loss / max(total_units, 1e-12), total_units


# --- rank 0 decides, the others follow -----------------------------------------------------------


def broadcast_bytes(ctx: Dist, data: Optional[bytes]) -> bytes:
    """Rank 0's ``data`` on every rank (a length, then the bytes, over the CPU group)."""
    n = torch.tensor([len(data) if ctx.main else 0], dtype=torch.int64)
    dist.broadcast(n, 0, group=ctx.group)
    size = int(n.item())
    if size == 0:
        return b""
    buf = (
        torch.frombuffer(bytearray(data), dtype=torch.uint8)
        if ctx.main
        else torch.empty(size, dtype=torch.uint8)
    )
    dist.broadcast(buf, 0, group=ctx.group)
    return data if ctx.main else buf.numpy().tobytes()


def broadcast_state(ctx: Dist, obj: Optional[dict]) -> Optional[dict]:
    """A checkpoint-like dict from rank 0 (torch.save bytes, loaded with weights_only=True)."""
    if not ctx.enabled:
        return obj
    raw = b""
    if ctx.main and obj is not None:
        buf = io.BytesIO()
        torch.save(obj, buf)
        raw = buf.getvalue()
    raw = broadcast_bytes(ctx, raw)
    if ctx.main:
        return obj
    return torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True) if raw else None


def on_main(ctx: Dist, fn: Callable[[], Any], errors: tuple = ()) -> Any:
    """Run ``fn`` on rank 0 only; every rank returns its JSON result or raises its error (one of
    ``errors`` by type, else RuntimeError), so all ranks leave together with the same message."""
    if not ctx.enabled:
        return fn()
    if ctx.main:
        try:
            value = fn()
        except Exception as e:
            broadcast_bytes(
                ctx, json.dumps({"ok": False, "type": type(e).__name__, "error": str(e)}).encode()
            )
            raise
        broadcast_bytes(ctx, json.dumps({"ok": True, "value": value}, default=str).encode())
        return value
    msg = json.loads(broadcast_bytes(ctx, None))
    if msg["ok"]:
        return msg["value"]
    cls = next((c for c in errors if c.__name__ == msg["type"]), RuntimeError)
    raise cls(f"{msg['error']} (reported by rank 0)")


def main_first(ctx: Dist, fn: Callable[[], Any], errors: tuple = ()) -> None:
    """Rank 0 runs ``fn`` first (e.g. to build the data cache), then the others run it."""
    on_main(ctx, lambda: (fn(), None)[1], errors)
    if not ctx.main:
        fn()


def gather_cpu(ctx: Dist, t: torch.Tensor) -> list[torch.Tensor]:
    """Every rank's copy of a same-sized CPU tensor (RNG states), via the gloo group."""
    if not ctx.enabled:
        return [t]
    out = [torch.empty_like(t) for _ in range(ctx.world)]
    dist.all_gather(out, t, group=ctx.group)
    return out


def any_rank(ctx: Dist, flag: bool) -> bool:
    """True on every rank if it is true on one (a preemption signal that reached some ranks
    first): all ranks then stop at the same step instead of one waiting in a collective."""
    if not ctx.enabled:
        return flag
    t = torch.tensor([int(flag)])
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=ctx.group)
    return bool(t.item())
