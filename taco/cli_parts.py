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


def json_mapping_option(flag: str, text: str | None, check) -> dict | None:
    """The JSON object of an option such as ``--space`` (None when the option is absent), checked by
    ``check(value, where) -> list of error lines``; ValueError naming ``flag`` when it is not a JSON object or
    the check finds a problem."""
    if text is None:
        return None
    import json

    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: not JSON ({exc})") from None
    errors = check(value, flag) if isinstance(value, dict) else [f"{flag}: a JSON object, got {text!r}"]
    if errors:
        raise ValueError("; ".join(errors))
    return value
