"""The commands that produce the statistics' files and pages: ``taco aggregate``, ``tables``, ``figures``,
``claims``, ``efficiency``, ``pretrain-curves``, ``dynamics-figures`` and ``deviations``, one module each, named
for its command word. Each reads its inputs, calls :mod:`taco.stats` for the numbers, hands them to
:mod:`taco.report`'s renderers and writes the files with a manifest; none imports another command
(``tests/test_boundaries.py``). ``taco.cli`` dispatches to them by name; what the aggregate-reading ones share
is :mod:`taco.commands.report_cli`.
"""
