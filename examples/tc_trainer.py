"""TACO on any Hugging Face masked-LM encoder with the HF Trainer: the TC loss added to a tiny RoBERTa
and a tiny ModernBERT, both built from configs and trained from scratch for a few steps, offline, on CPU.

    python examples/tc_trainer.py                       # both families, 8 steps each
    python examples/tc_trainer.py --family modernbert --steps 20

The suite's part is the last block of ``train`` (4 lines): a masking collator and ``TacoTrainer``
(``taco.tc.plugin``). The rest builds a WordPiece tokenizer on a toy corpus and the tiny models; with
your own model and data, only those 4 lines remain. Needs torch and transformers (and tokenizers, which
transformers installs).
"""

from __future__ import annotations

import argparse
import random
import tempfile

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (AutoModelForMaskedLM, DataCollatorForLanguageModeling, ModernBertConfig,
                          PreTrainedTokenizerFast, RobertaConfig, TrainingArguments)

from taco.tc.plugin import TacoTrainer

WORDS = ("the cat dog bird sees eats likes a small big red old new house tree river runs walks sleeps "
         "near under over quickly slowly and but when").split()


def toy_corpus(n: int = 400, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24))) for _ in range(n)]


def wordpiece_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """A small uncased WordPiece tokenizer with BERT's special tokens, trained on ``texts``."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


def tiny_model(family: str, tokenizer: PreTrainedTokenizerFast, max_length: int):
    """A 2-layer, 64-wide encoder of ``family`` with the tokenizer's special-token ids."""
    ids = dict(pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.cls_token_id,
               eos_token_id=tokenizer.sep_token_id)
    shape = dict(vocab_size=len(tokenizer), hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=128)
    if family == "roberta":  # positions start at padding_idx + 1: two more than the longest sequence
        config = RobertaConfig(**shape, **ids, max_position_embeddings=max_length + 2)
    elif family == "modernbert":  # ModernBERT's own default ids (50283, ...) would index past this vocabulary
        config = ModernBertConfig(**shape, **ids, cls_token_id=tokenizer.cls_token_id,
                                  sep_token_id=tokenizer.sep_token_id, max_position_embeddings=max_length,
                                  layer_types=["full_attention", "sliding_attention"], local_attention=16)
    else:
        raise ValueError(f"unknown family {family!r}: roberta or modernbert")
    return AutoModelForMaskedLM.from_config(config, attn_implementation="sdpa")


def train(family: str, steps: int = 8, max_length: int = 32, seed: int = 0) -> dict[str, float]:
    """Train a tiny ``family`` model with TACO for ``steps`` steps; the last step's MLM and TC losses."""
    texts = toy_corpus(seed=seed)
    tokenizer = wordpiece_tokenizer(texts)
    dataset = [tokenizer(t, truncation=True, max_length=max_length) for t in texts]
    model = tiny_model(family, tokenizer, max_length)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(out, per_device_train_batch_size=8, max_steps=steps, learning_rate=1e-3,
                                 report_to=[], save_strategy="no", logging_steps=max(1, steps // 2), seed=seed,
                                 use_cpu=True, dataloader_num_workers=0)
        # --- the suite's part: a masking collator and the Trainer that adds the TC loss ---
        collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
        trainer = TacoTrainer(model=model, args=args, train_dataset=dataset, data_collator=collator)
        trainer.train()
    return trainer.last_terms


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", choices=("roberta", "modernbert", "both"), default="both")
    p.add_argument("--steps", type=int, default=8)
    a = p.parse_args(argv)
    for family in (("roberta", "modernbert") if a.family == "both" else (a.family,)):
        terms = train(family, a.steps)
        print(f"{family}: MLM {terms['mlm']:.3f} nats, TC {terms['tc']:.3f} nats after {a.steps} steps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
