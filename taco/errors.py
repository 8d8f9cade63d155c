"""Errors shared by the ``taco`` commands: bad input (:class:`UsageError`, exit 2) and a full disk
(:func:`is_disk_full`, exit :data:`EXIT_NO_SPACE`)."""

from __future__ import annotations

import errno

#: exit status of a command that ran out of disk space while writing (``taco pretrain``, ``taco corpus``,
#: ``taco pack``): the half-written output is removed, what was complete before stays valid
EXIT_NO_SPACE = 4

#: how writers report a full disk when they do not raise OSError(ENOSPC): torch.save's zip writer
#: ("[enforce fail at inline_container.cc] . unexpected pos ..."/"file write failed"), safetensors
#: ("IoError(Os { code: 28, kind: StorageFull ...})"), shutil.copytree's ``shutil.Error`` (a list of
#: "[Errno 28] No space left on device" texts), pyarrow ("IOError: ... error: No space left on device")
_DISK_FULL_TEXT = ("no space left on device", "storagefull", "os error 28", "code: 28", "unexpected pos",
                   "file write failed", "enospc")


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) means the disk filled up while writing.

    True for ``OSError`` with ``errno.ENOSPC`` and for the errors torch.save, safetensors, pyarrow and
    ``shutil.copytree`` raise instead (matched on their text, see ``_DISK_FULL_TEXT``; measured on
    small tmpfs mounts).
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        text = str(exc).lower()
        if any(t in text for t in _DISK_FULL_TEXT):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def no_space_message(output: object, exc: BaseException) -> str:
    """The one-line error of a command whose output ``output`` (written through
    :func:`taco.manifest.atomic_directory`, so its partial copy is already removed) hit a full disk."""
    where = getattr(exc, "filename", None) or output
    return (f"no space left on device (ENOSPC) while writing {where}; the incomplete output was removed "
            f"({output} is unchanged). Free space and rerun the same command.")


class UsageError(ValueError):
    """Bad input found before any work starts; the command prints it and exits 2.

    The message names what is wrong: the option (``--checkpoint``), the file and line, or the
    configuration key.
    """
