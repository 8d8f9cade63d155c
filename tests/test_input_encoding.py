"""Non-UTF-8 bytes in an input file stop the command before any work, naming the file and line
(item 6): local GLUE TSVs (`taco finetune`), vocab.txt (`taco tokenizer`), the analysis spec."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from taco.textfile import InputEncodingError, read_utf8

RTE_HEADER = b"index\tsentence1\tsentence2\tlabel\n"
RTE_ROWS = [b"0\tA man walks.\tA person walks.\tentailment\n",
            b"1\tThe caf\xff is open.\tIt is closed.\tnot_entailment\n",  # line 3, byte 10: \xff
            b"2\tRain falls.\tIt rains.\tentailment\n"]


def _rte(root: Path, bad: bool) -> Path:
    d = root / "RTE"
    d.mkdir(parents=True, exist_ok=True)
    rows = RTE_ROWS if bad else [r.replace(b"\xff", b"e") for r in RTE_ROWS]
    (d / "train.tsv").write_bytes(RTE_HEADER + b"".join(rows) * 4)
    (d / "dev.tsv").write_bytes(RTE_HEADER + b"".join(r.replace(b"\xff", b"e") for r in RTE_ROWS))
    return d / "train.tsv"


def test_read_utf8_names_line_and_column(tmp_path):
    f = tmp_path / "x.txt"
    f.write_bytes(b"first line\nsecond \xffline\n")
    with pytest.raises(InputEncodingError) as err:
        read_utf8(f, "test file")
    msg = str(err.value)
    assert msg.startswith(f"{f}:2: not UTF-8")
    assert "column 8" in msg and "\\xff" in msg and "test file" in msg  # 7 bytes "second " then the bad one
    f.write_bytes(codecs.BOM_UTF8 + "caf\u00e9\r\n".encode())
    assert read_utf8(f, strip_bom=True) == "caf\u00e9\r\n"  # BOM dropped, no newline translation
    assert read_utf8(f).startswith("\ufeff")


def test_glue_tsv_with_a_non_utf8_byte_names_file_and_line(tmp_path):
    from taco.data.glue import GlueFormatError, load_local_glue, read_glue_tsv

    path = _rte(tmp_path, bad=True)
    with pytest.raises(GlueFormatError, match=r"RTE/train\.tsv:3: not UTF-8 text: byte\(s\) b'\\xff' at column 10"):
        read_glue_tsv(path, "rte")
    with pytest.raises(GlueFormatError, match=r"RTE/train\.tsv:3:"):
        load_local_glue("rte", tmp_path)
    good = read_glue_tsv(_rte(tmp_path / "ok", bad=False), "rte")
    assert good["sentence1"][1] == "The cafe is open." and good["label"][:3] == [0, 1, 0]


def test_finetune_exits_2_naming_the_file_before_training(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import BertTokenizerFast

    from taco.evaluation import finetune
    from taco.manifest import build_manifest, write_manifest
    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(59)]
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(words)}, do_lower_case=True)
    ckpt = tmp_path / "step-10"
    torch.manual_seed(0)
    PreTrainingModel(bert_config("tiny", len(tok)), objective="mlm").save_pretrained(str(ckpt))
    tok.save_pretrained(str(ckpt))
    write_manifest(ckpt, build_manifest("pretrain", {}, step=10, tokens_seen=1, objective="mlm", size="tiny",
                                        size_preset="tiny", fraction=1.0, config_hash="x", parent_checkpoint=None,
                                        wall_time_s=1.0))
    _rte(tmp_path / "glue", bad=True)
    out = tmp_path / "ft"
    rc = finetune.main(["--checkpoint", str(ckpt), "--task", "rte", "--seed", "1", "--glue-source", "local",
                        "--glue-dir", str(tmp_path / "glue"), "--output", str(out), "--epochs", "1",
                        "--device", "cpu", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"{tmp_path / 'glue' / 'RTE' / 'train.tsv'}:3: not UTF-8" in err
    assert "Traceback" not in err and not out.exists()


def test_vocab_file_with_a_non_utf8_byte(tmp_path, capsys):
    from taco.data.tokenizer import main

    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n\xe9t\xe9\n")
    assert main(["--kind", "vocab", "--vocab-file", str(vocab), "--output", str(tmp_path / "tok")]) == 2
    err = capsys.readouterr().err
    assert f"{vocab}:7: not UTF-8" in err and not (tmp_path / "tok").exists()


def test_analysis_spec_with_a_non_utf8_byte(tmp_path):
    from taco.stats.analysis_config import AnalysisConfigError, load_analysis

    spec = tmp_path / "analysis.yaml"
    spec.write_bytes(b"min_seeds: 2\n# caf\xe9\n")
    with pytest.raises(AnalysisConfigError, match=r"analysis\.yaml:2: not UTF-8"):
        load_analysis(spec)


def test_glue_test_tsv_with_a_non_utf8_byte_names_file_and_line(tmp_path):
    from taco.data.glue import GlueFormatError, read_glue_test_tsv

    path = tmp_path / "RTE" / "test.tsv"
    path.parent.mkdir()
    path.write_bytes(b"index\tsentence1\tsentence2\n0\ta\tb\n1\tna\xefve\tc\n")
    with pytest.raises(GlueFormatError, match=r"RTE/test\.tsv:3: not UTF-8 text"):
        read_glue_test_tsv(path, "rte")
    path.write_bytes(b"index\tsentence1\tsentence2\n0\ta\tb\n1\tna\xc3\xafve\tc\n")
    assert read_glue_test_tsv(path, "rte")["sentence1"] == ["a", "na\u00efve"]


def test_a_configuration_overlay_with_a_latin1_byte_names_the_file(tmp_path, capsys):
    """Fault sweep V, item 8: `taco plan` with an overlay holding a Latin-1 byte gave a UnicodeDecodeError
    traceback from the overlay-order check; now exit 2, one line naming the file."""
    from taco.cli import main

    overlay = tmp_path / "overlay.yaml"
    overlay.write_bytes(b"pretrain:\n  logging_steps: 20  # caf\xe9\n")
    smoke = Path(__file__).resolve().parent.parent / "configs" / "smoke.yaml"
    assert main(["plan", "--configfile", str(smoke), str(overlay)]) == 2
    err = capsys.readouterr().err
    assert str(overlay) in err and "Traceback" not in err and "0xe9" in err
