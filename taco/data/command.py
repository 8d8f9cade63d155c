"""The data commands' shared command line: ``taco corpus``, ``taco tokenizer`` and ``taco pack`` each write one
artifact folder (``--output``, replaced only with ``--overwrite``) and end the same way on bad input (exit 2
with the message) and on a full disk (exit :data:`taco.errors.EXIT_NO_SPACE`, naming the output; nothing
half-written stays: the artifacts are written atomically). Everything else is re-raised with its traceback.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from taco.cli_parts import HelpFormatter, cli_error
from taco.errors import EXIT_NO_SPACE, is_disk_full, no_space_message


def data_parser(command: str, description: str, *, output_help: str, overwrite_help: str) -> argparse.ArgumentParser:
    """The parser of ``taco <command>`` with its ``--output`` (required) and ``--overwrite`` options; the
    command adds its own."""
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, prog=f"taco {command}", description=description)
    p.add_argument("--output", required=True, help=output_help)
    p.add_argument("--overwrite", action="store_true", help=overwrite_help)
    return p


def run_data_command(command: str, output: str | Path, build: Callable[[], object]) -> int:
    """Run ``build()`` (which writes ``output``), print what it returns and return 0; a ``ValueError``,
    ``FileNotFoundError`` or ``FileExistsError`` returns 2 with its message, a full disk
    :data:`~taco.errors.EXIT_NO_SPACE` naming ``output``; any other error propagates."""
    try:
        out = build()
    except Exception as e:  # noqa: BLE001 - bad input and a full disk are reported, everything else re-raised
        if is_disk_full(e):
            return cli_error(command, no_space_message(output, e), EXIT_NO_SPACE)
        if isinstance(e, (ValueError, FileNotFoundError, FileExistsError)):
            return cli_error(command, e)
        raise
    print(out)
    return 0
