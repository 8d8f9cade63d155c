"""Print the sweep's table: task x arm x setting -> the per-seed primary metric (x100) and its mean.
Usage: python summarise.py DIAG_DIR"""
import collections, glob, json, sys
PRIMARY = {"cola": "matthews_correlation", "sst2": "accuracy", "mrpc": "f1", "stsb": "spearmanr", "rte": "accuracy"}
rows = collections.defaultdict(dict)
for f in sorted(glob.glob(f"{sys.argv[1]}/ft/*/*/*/seed-*/metrics.json")):
    m = json.load(open(f)); arm, setting, task = f.split("/")[-5:-2]
    rows[(task, setting)][arm] = rows[(task, setting)].get(arm, []) + [100 * m["scores"][task][PRIMARY[task]]]
arms = sorted({a for by in rows.values() for a in by}, key=lambda a: (a not in ("control", "mlm", "taco"), a))
print("| task | setting | " + " | ".join(arms) + " |\n|---|---|" + "---|" * len(arms))
for (task, setting), by in sorted(rows.items()):
    cells = [", ".join(f"{v:.1f}" for v in by.get(a, [])) + (f" (mean {sum(by[a]) / len(by[a]):.1f})" if by.get(a) else "")
             for a in arms]
    print(f"| {task} | {setting} | " + " | ".join(cells) + " |")
