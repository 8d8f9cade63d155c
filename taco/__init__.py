"""taco: models, objectives, data, training and statistics for reproducing
"Contextual Representation Learning beyond Masked Language Modeling" (Fu et al., ACL 2022).

The package never imports Snakemake; every step is a function with a thin CLI (``taco <command>``).
"""

__version__ = "0.1.0"
