"""The token-alignment contrastive (TC) loss (Fu et al. 2022, Eq. 5-10) and its position samplers: the
kernels under the TACO objectives (:mod:`taco.objectives.taco`), usable on any encoder's hidden states
(:func:`taco.tc.loss.tc_loss`, :mod:`taco.tc.sampling`). This file holds their torch-free constants.
"""

#: tau of the paper (Eq. 6) and the official code; the default of the option ``tc_temperature``
#: (``taco.objectives.taco``: ``--tc-temperature``, config ``pretrain.tc.temperature``)
DEFAULT_TEMPERATURE: float = 0.07

#: where the TC negatives come from under several processes (``taco.objectives.taco``'s docstring):
#: this process's device batch, or every process's (:func:`taco.tc.loss.gather_negative_pool`)
NEGATIVE_POOLS: tuple[str, ...] = ("rank", "all_ranks")
