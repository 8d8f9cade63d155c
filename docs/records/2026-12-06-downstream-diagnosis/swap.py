"""Swap one group of weights between two checkpoints of the same vocabulary: which part of the pre-trained
weights makes fine-tuning worse than random initialisation? Writes a copy of BASE whose tensors whose
name contains PATTERN come from DONOR (the manifest's model_sha256 updated, `swapped` recorded).
Usage: python swap.py BASE DONOR PATTERN OUT    e.g. PATTERN=word_embeddings"""
import json, shutil, sys
from pathlib import Path

from safetensors.torch import load_file, save_file

from taco.manifest import sha256_file

base, donor, pattern, out = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
shutil.copytree(base, out)
w, d = load_file(base / "model.safetensors"), load_file(donor / "model.safetensors")
names = [k for k in w if pattern in k]
assert names, f"no tensor matches {pattern!r}"
for k in names:
    w[k] = d[k].clone()
save_file(w, str(out / "model.safetensors"), metadata={"format": "pt"})
man = json.loads((out / "manifest.json").read_text())
man["model_sha256"] = sha256_file(out / "model.safetensors")
man["swapped"] = {"pattern": pattern, "from": str(donor), "tensors": names}
(out / "manifest.json").write_text(json.dumps(man, indent=2))
print(f"{out}: {len(names)} tensors from {donor}: {names}")
