"""What every ``taco`` command module shares: the ``--help`` layout (:class:`HelpFormatter`) and the error
tail (:func:`cli_error`). Below the commands and below the dispatcher (:mod:`taco.cli`), which imports no
command module until it runs one. Standard library only.
"""

from __future__ import annotations

import argparse
import sys


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """The ``--help`` layout of every ``taco`` command: each option's default is appended as
    ``(default: X)``, unless its help already states the default (``default`` in the text) or there is
    none to state (a required option, a flag, ``None``, an empty list)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or action.required or not action.option_strings
                or isinstance(action, argparse._StoreConstAction)  # a flag: nothing to default
                or default is None or default is False or default is argparse.SUPPRESS
                or (isinstance(default, (list, tuple, str)) and len(default) == 0)):
            return text
        return text + " (default: %(default)s)"


def cli_error(command: str, message: object, status: int = 2) -> int:
    """The error tail the commands share: print ``taco <command>: error: <message>`` to stderr and
    return ``status`` (default 2, bad input found before any work), for ``main`` to return::

        except (UsageError, FileNotFoundError) as exc:
            return cli_error("pack", exc)
    """
    print(f"taco {command}: error: {message}", file=sys.stderr)
    return status
