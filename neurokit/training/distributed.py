"""Single-process, multi-GPU and multi-node training through ``torchrun`` (DistributedDataParallel).

``torchrun --nproc_per_node=G [--nnodes ... --rdzv_endpoint ...] -m neurokit pretrain ...`` sets
``RANK``/``WORLD_SIZE``/``LOCAL_RANK``; :func:`setup` then joins the process group (NCCL on CUDA, Gloo on
the CPU) and pins one GPU per process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch


@dataclass
class DistInfo:
    """Where this process stands in a (possibly one-process) training run, as :func:`setup` found it.

    Attributes
    ----------
    rank : int
        The process's rank among all processes (``RANK``; 0 alone).
    world_size : int
        The number of processes (``WORLD_SIZE``; 1 alone).
    local_rank : int
        The rank on this node (``LOCAL_RANK``), the GPU it pins.
    device : torch.device
        Where this process computes.

    Examples
    --------
    >>> info = DistInfo()
    >>> info.is_main, info.enabled, info.device.type
    (True, False, 'cpu')
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0 (the process that logs and writes files)."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        """Whether there are several processes (a process group to reduce over)."""
        return self.world_size > 1


def setup(device: str = "auto") -> DistInfo:
    """Join the process group when launched by torchrun; choose the device.

    Parameters
    ----------
    device : str
        Where to compute: ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:K"`` or
        ``"mps"``. Under torchrun, ``"cuda"`` is the process's local GPU.

    Returns
    -------
    DistInfo
        The process's rank, the world size and the device (the process group joined when ``WORLD_SIZE`` > 1:
        NCCL on CUDA, Gloo otherwise).

    Raises
    ------
    ConfigError
        An unknown device, or a CUDA device without a visible GPU.

    Examples
    --------
    >>> setup("cpu").device
    device(type='cpu')
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    import re

    from neurokit._utils.errors import ConfigError

    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?|mps", device):
        raise ConfigError(f"device={device!r}; allowed: auto, cpu, cuda, cuda:K, mps")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device={device!r} but no CUDA GPU is visible to PyTorch; use device='cpu' or 'auto'")
    if device == "cuda":
        dev = torch.device("cuda", local if world > 1 else torch.cuda.current_device())
        torch.cuda.set_device(dev)
    else:
        dev = torch.device(device)
    if world > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if dev.type == "cuda" else "gloo"
        torch.distributed.init_process_group(backend=backend)
    return DistInfo(rank=rank, world_size=world, local_rank=local, device=dev)


def cleanup(info: DistInfo) -> None:
    """Leave the process group, if one was joined; nothing for a single process.

    Parameters
    ----------
    info : DistInfo
        The process's place in the group (:func:`setup`).

    Examples
    --------
    >>> cleanup(DistInfo())
    """
    if info.enabled and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def all_reduce_mean(value: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """The mean of ``value`` over every process (collective: every rank must call it).

    Parameters
    ----------
    value : torch.Tensor
        A tensor of the same shape on every rank (e.g. a loss, shape ``()``), on the process's device.
    info : DistInfo
        The process's place in the group (:func:`setup`).

    Returns
    -------
    torch.Tensor
        A new tensor holding the mean over ranks; ``value`` itself for a single process.

    Examples
    --------
    >>> all_reduce_mean(torch.tensor(2.0), DistInfo())
    tensor(2.)
    """
    if info.enabled:
        value = value.detach().clone()
        torch.distributed.all_reduce(value)
        value /= info.world_size
    return value


def barrier(info: DistInfo) -> None:
    """Wait until every process reaches this point; nothing for a single process.

    Parameters
    ----------
    info : DistInfo
        The process's place in the group (:func:`setup`).

    Examples
    --------
    >>> barrier(DistInfo())
    """
    if info.enabled:
        torch.distributed.barrier()


def align_grad_strides(module: torch.nn.Module) -> None:
    """Give every gradient of ``module`` exactly its parameter's strides, before DDP wraps it.

    A parameter with a size-1 dimension (CBraMod's depthwise positional-encoding conv, ``(200, 1, 19, 7)``)
    may get a gradient whose stride along that dimension differs from the parameter's (the CPU conv
    backward returns channels-last ``(133, 1, 7, 1)`` for ``(133, 133, 7, 1)``). Autograd accepts it, since
    a size-1 dimension's stride addresses nothing, but DDP's reducer compares strides exactly and warns
    ("Grad strides do not match bucket view strides"). The hook re-views such a gradient with the
    parameter's strides: the same memory, no copy. Gradients that differ in a dimension of size > 1 are
    left alone (autograd copies those into the parameter's layout itself).

    Parameters
    ----------
    module : torch.nn.Module
        The model about to be wrapped in :class:`~torch.nn.parallel.DistributedDataParallel`; hooks are
        registered on its parameters with a size-1 dimension.

    Examples
    --------
    >>> conv = torch.nn.Conv2d(4, 4, (7, 1), groups=4)
    >>> align_grad_strides(conv)
    >>> conv(torch.randn(1, 4, 9, 1)).sum().backward()
    >>> conv.weight.grad.stride() == conv.weight.stride()
    True
    """
    for p in module.parameters():
        if p.requires_grad and 1 in p.shape:
            p.register_hook(_restride_hook(tuple(p.shape), p.stride()))


def _restride_hook(shape: tuple, want: tuple):
    def hook(g: torch.Tensor) -> torch.Tensor:
        if (
            g.stride() != want
            and tuple(g.shape) == shape
            and all(a == b for a, b, n in zip(g.stride(), want, shape) if n != 1)
        ):
            return g.as_strided(shape, want)
        return g

    return hook
