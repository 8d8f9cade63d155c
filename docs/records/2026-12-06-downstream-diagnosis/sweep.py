"""The fine-tuning sweep of the downstream diagnosis (issue 51, item 1): every checkpoint x lr x task x seed
with `taco finetune`, two single-threaded jobs at a time. Usage:
    python sweep.py DIAG_DIR GLUE_DIR  (DIAG_DIR holds control/step-0, mlm/step-1000, taco/step-1000)
Environment: ARMS ("name=relative/path ..."), LRS, TASKS, SEEDS, EXTRA (more taco finetune words), TAG.
Each run writes DIAG_DIR/ft/<arm>/lr-<lr>[-<extra>]/<task>/seed-<seed>/metrics.json; finished runs are skipped."""
import itertools, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

diag, glue = Path(sys.argv[1]), sys.argv[2]
arms = dict(a.split("=") for a in os.environ.get(
    "ARMS", "control=control/step-0 mlm=mlm/step-1000 taco=taco/step-1000").split())
lrs = [float(x) for x in os.environ.get("LRS", "5e-5 1e-4 3e-4 1e-3").split()]
tasks = os.environ.get("TASKS", "sst2 cola").split()
extra = os.environ.get("EXTRA", "").split()  # e.g. "--epochs 6" or "--dropout 0.1"
tag = os.environ.get("TAG", "")
seeds = os.environ.get("SEEDS", "1 2").split()

def job(arm, lr):
    out = diag / "ft" / arm / f"lr-{lr:g}{tag}"
    if all((out / t / f"seed-{s}" / "metrics.json").exists() for t in tasks for s in seeds):
        return
    cmd = ["taco", "finetune", "--checkpoint", str(diag / arms[arm]), "--task", *tasks, "--seed", *seeds,
           "--glue-source", "local", "--glue-dir", glue, "--lr", str(lr), "--epochs", "3", "--warmup-steps", "30",
           "--max-train-samples", "5000", "--max-eval-samples", "2000", "--no-test-predictions",
           "--report-to", "none", "--no-progress", *extra, "--output", str(out / "{task}" / "seed-{seed}")]
    log = diag / "logs" / f"ft-{arm}-{lr:g}{tag}.log"
    subprocess.run(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})

with ThreadPoolExecutor(2) as pool:
    list(pool.map(lambda a: job(*a), itertools.product(arms, lrs)))
