"""The statistics of the suite, apart from how they are rendered: aggregation of fine-tuning metrics
(:mod:`taco.stats.aggregate`), intervals and tests (:mod:`taco.stats.inference`), the steps-to-target speedup
(:mod:`taco.stats.speedup`), its verdict (:mod:`taco.stats.speedup_decision`), its calibration and simulation
(:mod:`taco.stats.speedup_calibration`, :mod:`taco.stats.speedup_simulation`), the efficiency table as data
(:mod:`taco.stats.efficiency`), the claims and their evaluation (:mod:`taco.stats.claims`) with their decision
rules (:mod:`taco.stats.claim_rules`), the tables as data (:mod:`taco.stats.table_data`), the analysis spec (:mod:`taco.stats.analysis_config`) and the validation
points of a checkpoint (:mod:`taco.stats.validation_points`). No matplotlib, no Markdown: the pages, tables
and figures that show these numbers are :mod:`taco.report`'s. Torch-free.
"""
