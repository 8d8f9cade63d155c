"""The TC options, declared once beside the TC loss: weight, temperature tau, positive window W,
negatives K and the negative pool (config group ``pretrain.tc``, flags ``--tc-*``).

The TACO objectives (:mod:`taco.objectives.taco`) take these declarations as their ``OPTIONS``; the
loss (:func:`taco.tc.loss.tc_loss`) and the Trainer plug-in (:class:`taco.tc.plugin.TacoTrainer`) take
their defaults from here. Defaults are the paper's and the official code's (Fu et al. 2022, Eq. 5-10;
``github:FUZHIYI/TACO``: weight 1.0, tau 0.07, W = 5, K = 50). Torch-free.

Negative pool (``negative_pool``): the official scripts train on 2 GPUs in one process through
``torch.nn.DataParallel``, so the loss sees both GPUs' sequences and draws the negatives among them.
Under ``torch.distributed.run`` (one process per GPU) ``rank`` (default) draws them from the process's own
device batch; ``all_ranks`` from every process's (an all-gather of the detached keys and masks,
:func:`taco.tc.loss.gather_negative_pool`), the official pool. With one process both are the same.
"""

from __future__ import annotations

from taco.parameters import check_values, objective_option

#: where the TC negatives come from under several processes: this process's device batch, or every
#: process's (:func:`taco.tc.loss.gather_negative_pool`)
NEGATIVE_POOLS: tuple[str, ...] = ("rank", "all_ranks")

#: the TC options (group ``tc``), model parameter names ``tc_*``
OPTIONS = (
    objective_option("tc", "weight", "tc_weight", 1.0, "weight of the TC loss added to MLM (official code: 1.0)",
                     minimum=0, hash_always=True),
    objective_option("tc", "temperature", "tc_temperature", 0.07,
                     "temperature tau of the TC loss's cosine-similarity score (paper Eq. 6; > 0)",
                     exclusive_minimum=0, hash_always=True),
    objective_option("tc", "window", "tc_window", 5,
                     "positive window W: positives at offset +-1..+-floor(W/2) (odd, >= 3)",
                     minimum=3, odd=True, hash_always=True),
    objective_option("tc", "num_negatives", "tc_num_negatives", 50,
                     "negatives K per anchor, from the other sequences (>= 1)",
                     minimum=1, maximum=65536, hash_always=True, flag="--tc-negatives"),
    # added after runs existed: at its default neither in the config hash nor on the command line
    objective_option("tc", "negative_pool", "tc_negative_pool", "rank",
                     "where the negatives' sequences come from with several processes: rank = this process's "
                     "device batch; all_ranks = every process's (all-gather of the detached keys; the official "
                     "code's 2-GPU DataParallel pool)", choices=NEGATIVE_POOLS, hash_when_default=False,
                     pass_default=False),
)

#: parameter name -> default of every TC option (``DEFAULTS["tc_temperature"]`` is tau = 0.07)
DEFAULTS: dict[str, float | int | str] = {o.name: o.default for o in OPTIONS}


def check_tc_options(values: dict[str, object]) -> list[str]:
    """Error messages (empty when valid) for TC option ``values`` (parameter name -> value), by the
    declarations' own checks (the ones ``taco pretrain`` and the workflow's config check apply)."""
    return check_values(OPTIONS, dict(values), {name: name for name in values})
