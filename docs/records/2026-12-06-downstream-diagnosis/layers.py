"""Per-layer frozen probe of SST-2 and CoLA (mean-pooled features of each hidden layer: 0 = embeddings) and the
mean cosine similarity of two tokens' last-layer states within a sentence, for each checkpoint.
Usage: python layers.py GLUE_DIR CKPT [CKPT ...]   (prints a Markdown table)"""
import sys

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from taco.data.glue import cap_split, load_glue_task
from taco.training.glue_probe import fit_probe
from taco.registry import GLUE_TASK_SPECS

glue, ckpts = sys.argv[1], sys.argv[2:]
print("| checkpoint | task | " + " | ".join(f"layer {i}" for i in range(3)) + " | within-sentence cosine (last layer) |")
print("|---|---|---|---|---|---|")
for ckpt in ckpts:
    tok = AutoTokenizer.from_pretrained(ckpt)
    model = AutoModel.from_pretrained(ckpt).eval()
    for task in ("sst2", "cola"):
        spec = GLUE_TASK_SPECS[task]
        data = load_glue_task(task, "local", glue, splits=("train", "validation"))
        tr, dv = cap_split(data["train"], 5000, 0, task, "train"), cap_split(data["validation"], 2000, 0, task, "validation")
        feats, cos = {}, []
        for name, ds in (("train", tr), ("dev", dv)):
            per_layer = None
            for s in range(0, len(ds), 64):
                enc = tok(ds[spec.text_fields[0]][s:s + 64], truncation=True, max_length=128, padding=True, return_tensors="pt")
                with torch.no_grad():
                    hs = model(**enc, output_hidden_states=True).hidden_states
                m = enc["attention_mask"].unsqueeze(-1).float()
                pooled = [((h * m).sum(1) / m.sum(1)).double().numpy() for h in hs]
                per_layer = pooled if per_layer is None else [np.vstack([a, b]) for a, b in zip(per_layer, pooled)]
                if name == "dev":
                    last = torch.nn.functional.normalize(hs[-1], dim=-1)
                    for b in range(last.shape[0]):
                        n = int(enc["attention_mask"][b].sum())
                        if n > 3:
                            sims = last[b, 1:n - 1] @ last[b, 1:n - 1].T
                            k = sims.shape[0]
                            cos.append(float((sims.sum() - k) / (k * (k - 1))))
            feats[name] = per_layer
        scores = [100 * fit_probe(task, feats["train"][i], tr["label"], feats["dev"][i], dv["label"])["primary"]
                  for i in range(len(feats["train"]))]
        print(f"| {ckpt} | {task} | " + " | ".join(f"{v:.1f}" for v in scores) + f" | {np.mean(cos):.3f} |")
