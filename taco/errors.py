"""Errors shared by the ``taco`` commands."""

from __future__ import annotations


class UsageError(ValueError):
    """Bad input found before any work starts; the command prints it and exits 2.

    The message names what is wrong: the option (``--checkpoint``), the file and line, or the
    configuration key.
    """
