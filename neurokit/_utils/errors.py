"""Exception types raised by neurokit. Each message names the file, the problem and the fix."""

from __future__ import annotations


class NeurokitError(Exception):
    """Base class of every error neurokit raises on purpose."""


class DataFileError(NeurokitError, ValueError):
    """A recording cannot be used: unreadable, truncated, no EEG channels, too short, bad values."""


class ChannelMismatchError(NeurokitError, ValueError):
    """The channel set of the data differs from what a model or checkpoint expects."""


class StoreError(NeurokitError, ValueError):
    """An HDF5 patch store is missing, incomplete or of the wrong kind."""


class ScratchError(StoreError):
    """Scratch or part files beside the output could not be written (``errno``: the OS error number, kept
    when the error crosses to another process)."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno

    def __reduce__(self):
        return (type(self), (self.args[0], self.errno))


class Float16OverflowError(StoreError):
    """A recording holds values beyond float16's range and the card refuses to clip them (``prepare --dtype
    float16``); ``skip_bad`` leaves such a recording out, like a bad file."""


class CardError(NeurokitError, ValueError):
    """A data card is missing or invalid."""


class ConfigError(NeurokitError, ValueError):
    """A configuration value is out of range or inconsistent."""


class WeightsError(NeurokitError, ValueError):
    """A weights file does not fit the model: tensors missing, unexpected or of another shape."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a pipeline; ``message`` says what was saved and how to continue."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DiskFullError(NeurokitError, OSError):
    """The disk (or the user's quota) filled up while neurokit wrote a file; ``errno`` is ``ENOSPC`` (or
    ``EDQUOT``), so code that tests ``OSError.errno`` still sees a full disk. The message says what is kept
    and how to go on; ``str(exc)`` is that message alone."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        import errno as _errno

        super().__init__(errno if errno is not None else _errno.ENOSPC, message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.errno))
