"""The token-alignment contrastive (TC) loss (Fu et al. 2022, Eq. 5-10), its position samplers and its
options: the kernels under the TACO objectives (:mod:`taco.objectives.taco`), usable on any encoder's hidden
states (:func:`taco.tc.loss.tc_loss`, :mod:`taco.tc.sampling`, :mod:`taco.tc.options`,
:class:`taco.tc.plugin.TacoTrainer`). Nothing here imports the objectives or anything above them.
"""
