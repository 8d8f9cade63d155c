"""Corpora, tokenizers, packing into blocks, GLUE loading and the synthetic offline language."""
