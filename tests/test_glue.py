"""GLUE registry and loaders: real local files, the Hub code path on parquet files written here,
and the synthetic source. No network (conftest sets HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)."""

from __future__ import annotations

import pytest

from taco.registry import GLUE_TASK_SPECS
from taco.data.glue import GlueFormatError, available_local_tasks, load_glue_task, read_glue_tsv

#: GLUE sizes (SOURCES.md and the GLUE paper): task -> (train rows, dev rows)
LOCAL_COUNTS = {
    "cola": (8551, 1043), "sst2": (67349, 872), "mrpc": (3668, 408), "stsb": (5749, 1500),
    "rte": (2490, 277), "wnli": (635, 71),
}


def test_registry():
    assert sorted(GLUE_TASK_SPECS) == sorted(["cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli"])
    mnli = GLUE_TASK_SPECS["mnli"]
    assert mnli.dev_splits == ("validation_matched", "validation_mismatched")
    assert mnli.score_keys == ("mnli_m", "mnli_mm") and mnli.num_labels == 3
    assert GLUE_TASK_SPECS["stsb"].is_regression and GLUE_TASK_SPECS["stsb"].num_labels == 1
    assert GLUE_TASK_SPECS["sst2"].dir_name == "SST-2" and GLUE_TASK_SPECS["sst2"].score_keys == ("sst2",)
    assert GLUE_TASK_SPECS["qnli"].text_fields == ("question", "sentence")
    assert GLUE_TASK_SPECS["qqp"].metrics == ("accuracy", "f1")
    assert GLUE_TASK_SPECS["cola"].metrics == ("matthews_correlation",)
    # Hub label names (nyu-mll/glue ClassLabel): WNLI is the one with entailment = 1
    assert GLUE_TASK_SPECS["wnli"].label_names == ("not_entailment", "entailment")
    assert GLUE_TASK_SPECS["rte"].label_names == ("entailment", "not_entailment")


@pytest.mark.parametrize("task", sorted(LOCAL_COUNTS))
def test_local_real_files(shared_data, task):
    ds = load_glue_task(task, "local", shared_data / "glue")
    t = GLUE_TASK_SPECS[task]
    assert {k: len(v) for k, v in ds.items()} == dict(zip(("train", "validation"), LOCAL_COUNTS[task]))
    assert ds["train"].features == t.features()
    assert ds["validation"]["idx"][:3] == [0, 1, 2]
    if not t.is_regression:
        assert set(ds["validation"]["label"]) == set(range(t.num_labels))


def test_local_real_file_details(shared_data):
    glue = shared_data / "glue"
    cola = read_glue_tsv(glue / "CoLA" / "dev.tsv", "cola")  # no header, no final newline
    assert cola["sentence"][0] == "The sailors rode the breeze clear of the rocks."
    assert cola["label"][0] == 1 and len(cola["label"]) == 1043
    mrpc = read_glue_tsv(glue / "MRPC" / "dev.tsv", "mrpc")  # BOM before "Quality"
    assert mrpc["label"][:2] == [1, 0]
    assert mrpc["sentence2"][0].startswith('"The foodservice pie')  # unbalanced quote kept as is
    sst = read_glue_tsv(glue / "SST-2" / "dev.tsv", "sst2")
    assert sst["sentence"][0] == "it 's a charming and often affecting journey . "
    rte = read_glue_tsv(glue / "RTE" / "dev.tsv", "rte")
    assert rte["label"][0] == 1  # not_entailment -> 1 as on the Hub
    assert sum(rte["label"]) == 131  # RTE dev: 146 entailment, 131 not_entailment
    stsb = read_glue_tsv(glue / "STS-B" / "dev.tsv", "stsb")
    assert stsb["label"][0] == 5.0 and len(stsb["label"]) == 1500
    qnli = load_glue_task("qnli", "local", glue, splits=("validation",))
    assert list(qnli) == ["validation"] and len(qnli["validation"]) == 5463
    assert qnli["validation"][0]["label"] == 0  # entailment


def test_local_missing_tasks_reported(shared_data):
    avail = available_local_tasks(shared_data / "glue")
    assert avail["cola"] is None and avail["rte"] is None
    assert "MNLI/dev_matched.tsv" in avail["mnli"] and "QQP" in avail["qqp"]
    assert "QNLI/train.tsv" in avail["qnli"] and "dev.tsv" not in avail["qnli"]
    with pytest.raises(FileNotFoundError, match=r"(?s)QNLI/train\.tsv.*expected the original GLUE layout"):
        load_glue_task("qnli", "local", shared_data / "glue")


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_local_malformed_rows(tmp_path):
    header = "index\tsentence1\tsentence2\tlabel\n"
    bad_fields = _write(tmp_path / "RTE" / "train.tsv", header + "0\ta\tb\tentailment\n1\ta\tb\n")
    with pytest.raises(GlueFormatError, match=r"RTE/train\.tsv:3: expected 4 tab-separated fields, found 3"):
        read_glue_tsv(bad_fields, "rte")
    bad_label = _write(tmp_path / "RTE" / "dev.tsv", header + "0\ta\tb\tneutral\n")
    with pytest.raises(GlueFormatError, match=r"RTE/dev\.tsv:2: unknown label 'neutral'"):
        read_glue_tsv(bad_label, "rte")
    with pytest.raises(GlueFormatError, match="header has no column 'label'"):
        read_glue_tsv(_write(tmp_path / "x.tsv", "index\tsentence1\tsentence2\n"), "rte")
    cola = _write(tmp_path / "CoLA" / "dev.tsv", 'src\t1\t\t"quoted start\nsrc\t2\t*\tbad\n')
    with pytest.raises(GlueFormatError, match=r"dev\.tsv:2: unknown label '2'"):
        read_glue_tsv(cola, "cola")
    with pytest.raises(FileNotFoundError, match=r"(?s)nothere\.tsv.*CoLA/\{train\.tsv,dev\.tsv\}"):
        read_glue_tsv(tmp_path / "nothere.tsv", "cola")


def test_local_mnli_layout(tmp_path):
    head = "\t".join(["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
                      "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
                      "sentence2", "label1", "gold_label"]) + "\n"
    row = "0\t1\t1n\tgov\t(x)\t(y)\t(X)\t(Y)\tA man sleeps.\tA person sleeps.\tentailment\t{}\n"
    for name, gold in (("train.tsv", "contradiction"), ("dev_matched.tsv", "neutral"),
                       ("dev_mismatched.tsv", "entailment")):
        _write(tmp_path / "MNLI" / name, head + row.format(gold))
    ds = load_glue_task("mnli", "local", tmp_path)
    assert list(ds) == ["train", "validation_matched", "validation_mismatched"]
    assert [ds[s][0]["label"] for s in ds] == [2, 1, 0]
    assert ds["train"][0]["premise"] == "A man sleeps." and ds["train"][0]["hypothesis"] == "A person sleeps."


def test_hub_code_path_on_local_parquet(tmp_path):
    """``load_dataset(hub_id, task)`` on a folder laid out like the nyu-mll/glue repository."""
    from datasets import Dataset

    repo = tmp_path / "glue_repo"
    readme = ["---", "configs:"]
    for task, rows in {
        "rte": {"sentence1": ["p1", "p2"], "sentence2": ["h1", "h2"], "label": [0, 1], "idx": [0, 1]},
        "mnli": {"premise": ["p"], "hypothesis": ["h"], "label": [2], "idx": [0]},
    }.items():
        t = GLUE_TASK_SPECS[task]
        readme += [f"- config_name: {task}", "  data_files:"]
        for split in (*t.splits, "test"):
            (repo / task).mkdir(parents=True, exist_ok=True)
            r = dict(rows) if split != "test" else {**rows, "label": [-1] * len(rows["label"])}
            Dataset.from_dict(r, features=t.features()).to_parquet(str(repo / task / f"{split}-00000-of-00001.parquet"))
            readme += [f"  - split: {split}", f"    path: {task}/{split}-*"]
    (repo / "README.md").write_text("\n".join(readme + ["---", ""]))
    ds = load_glue_task("rte", "hub", hub_id=str(repo), cache_dir=str(tmp_path / "cache"))
    assert list(ds) == ["train", "validation"] and ds["validation"]["label"] == [0, 1]
    assert ds["train"].features == GLUE_TASK_SPECS["rte"].features()
    mnli = load_glue_task("mnli", "hub", hub_id=str(repo), cache_dir=str(tmp_path / "cache"))
    assert list(mnli) == ["train", "validation_matched", "validation_mismatched"]


def test_source_errors():
    with pytest.raises(ValueError, match="unknown GLUE task"):
        load_glue_task("squad", "synthetic")
    with pytest.raises(ValueError, match="unknown GLUE source"):
        load_glue_task("rte", "ftp")
    with pytest.raises(ValueError, match="needs data_dir"):
        load_glue_task("rte", "local")


def test_test_splits_from_hub_local_and_synthetic(tmp_path):
    """Unlabelled test splits: Hub parquet layout (AX config absent -> reported, not raised), a local
    folder (header with ``index``/``id``; bad rows named by line), the synthetic source."""
    from datasets import Dataset

    from taco.data.glue import GlueFormatError, load_glue_test

    repo = tmp_path / "glue_repo"
    readme = ["---", "configs:", "- config_name: rte", "  data_files:"]
    t = GLUE_TASK_SPECS["rte"]
    rows = {"sentence1": ["p1", "p2", "p3"], "sentence2": ["h1", "h2", "h3"], "label": [0, 1, 0], "idx": [0, 1, 2]}
    (repo / "rte").mkdir(parents=True)
    for split in (*t.splits, "test"):
        r = rows if split != "test" else {**rows, "label": [-1, -1, -1]}
        Dataset.from_dict(r, features=t.features()).to_parquet(str(repo / "rte" / f"{split}-00000-of-00001.parquet"))
        readme += [f"  - split: {split}", f"    path: rte/{split}-*"]
    (repo / "README.md").write_text("\n".join(readme + ["---", ""]))
    present, absent = load_glue_test("rte", "hub", hub_id=str(repo), cache_dir=str(tmp_path / "cache"))
    (split, ds), = present.items()
    assert split.submission_file == "RTE.tsv" and absent == {}
    assert ds.column_names == ["sentence1", "sentence2", "idx"] and ds["idx"] == [0, 1, 2]
    assert ds["sentence2"] == ["h1", "h2", "h3"]

    glue = tmp_path / "glue"
    (glue / "QQP").mkdir(parents=True)
    (glue / "QQP" / "test.tsv").write_text("id\tquestion1\tquestion2\n0\tq a?\tq b?\n1\t\"odd\tq c?\n")
    present, absent = load_glue_test("qqp", "local", glue)
    (split, ds), = present.items()
    assert split.submission_file == "QQP.tsv" and ds["question1"] == ["q a?", '"odd'] and ds["idx"] == [0, 1]
    present, absent = load_glue_test("mnli", "local", glue)
    assert present == {} and sorted(s.submission_file for s in absent) == ["AX.tsv", "MNLI-m.tsv", "MNLI-mm.tsv"]
    assert any("diagnostic/diagnostic.tsv" in why for why in absent.values())
    (glue / "QQP" / "test.tsv").write_text("id\tquestion1\tquestion2\n0\tq a?\n")
    with pytest.raises(GlueFormatError, match=r"test.tsv:2: expected 3 tab-separated fields"):
        load_glue_test("qqp", "local", glue)

    present, _ = load_glue_test("mnli", "synthetic", num_test=5)
    assert {s.submission_file: len(d) for s, d in present.items()} == {"MNLI-m.tsv": 5, "MNLI-mm.tsv": 5, "AX.tsv": 5}
    again, _ = load_glue_test("mnli", "synthetic", num_test=5)
    assert [d["premise"] for d in present.values()] == [d["premise"] for d in again.values()]


# ---- capped sets: a seeded random sample ----------------------------------------------
def test_sample_indices_stratified_seeded_not_the_first_rows():
    from collections import Counter

    from taco.data.glue import sample_indices

    labels = [0] * 700 + [1] * 200 + [2] * 100  # ordered by label, as GLUE files are ordered by source
    idx = sample_indices(labels, 100, seed=7, stratify=True, stream="x|train")
    assert len(idx) == len(set(idx)) == 100 and idx == sorted(idx)
    assert Counter(labels[i] for i in idx) == {0: 70, 1: 20, 2: 10}  # the label proportions, exactly
    assert idx != list(range(100))
    assert idx == sample_indices(labels, 100, seed=7, stratify=True, stream="x|train")  # same seed, same rows
    assert idx != sample_indices(labels, 100, seed=8, stratify=True, stream="x|train")
    assert idx != sample_indices(labels, 100, seed=7, stratify=True, stream="x|validation")
    # uneven shares: largest remainders, the total is still n and no class exceeds its proportion by > 1
    odd = sample_indices(labels, 33, seed=1, stratify=True)
    counts = Counter(labels[i] for i in odd)
    assert sum(counts.values()) == 33
    assert all(abs(counts[c] - 33 * k / 1000) < 1 for c, k in ((0, 700), (1, 200), (2, 100)))
    # regression: a simple random sample spread over the whole file
    reg = sample_indices([0.5] * 1000, 200, seed=3, stratify=False)
    assert len(set(reg)) == 200 and max(reg) > 800 and min(reg) < 200
    assert sample_indices(labels, 5000, seed=0, stratify=True) == list(range(1000))  # cap above size: all


def test_capped_cola_and_stsb_cover_the_whole_file(shared_data):
    """CoLA's first 5,000 training rows come from 7 of its 17 source publications; the seeded sample
    covers every source and keeps the label shares. STS-B's first 5,000 leave out its last 749 pairs;
    the sample takes them in proportion. Coverage is measured on the raw files, independently."""
    from collections import Counter

    from taco.data.glue import cap_split

    raw = (shared_data / "glue" / "CoLA" / "train.tsv").read_text(encoding="utf-8").splitlines()
    sources = [ln.split("\t")[0] for ln in raw]
    raw_labels = [int(ln.split("\t")[1]) for ln in raw]
    assert len(set(sources[:5000])) == 7 and len(set(sources)) == 17
    cola = load_glue_task("cola", "local", shared_data / "glue")
    capped = cap_split(cola["train"], 5000, seed=0, task="cola", split="train")
    idx = capped["idx"]
    assert len(idx) == 5000 and idx != list(range(5000))
    assert len({sources[i] for i in idx}) == 17
    share = Counter(raw_labels[i] for i in idx)
    full = Counter(raw_labels)
    assert all(abs(share[c] - 5000 * full[c] / len(raw_labels)) < 1 for c in full)
    assert cap_split(cola["train"], 5000, seed=0, task="cola", split="train")["idx"] == idx  # reproducible
    dev = cap_split(cola["validation"], 500, seed=0, task="cola", split="validation")["idx"]
    assert len(dev) == 500 and max(dev) >= 900  # the dev cap is a sample too, not the first 500
    stsb = load_glue_task("stsb", "local", shared_data / "glue")["train"]
    sidx = cap_split(stsb, 5000, seed=0, task="stsb", split="train")["idx"]
    tail = sum(i >= 5000 for i in sidx)
    assert 550 <= tail <= 750  # expected 5000 x 749 / 5749 = 651 (hypergeometric SD about 8)
