"""A real full disk while saving a state: a small tmpfs holds the state folder; and
while `taco corpus` / `taco pack` write their artifact (a real tmpfs, plus a simulated ENOSPC that
runs everywhere).

torch.save (optimizer.pt) and safetensors (model.safetensors) do not raise OSError(ENOSPC) when the
disk fills: torch's zip writer raises RuntimeError ("unexpected pos" / "file write failed"),
safetensors its own SafetensorError. Either way `taco pretrain` must name the path, remove the
half-written state, keep the earlier complete state and exit 4. A tiny-preset state is ~6.2 MB
(2.0 MB weights + 4.1 MB optimizer): at 10 MB the second save fails inside torch.save, at 7 MB
inside safetensors. Needs root to mount a tmpfs; skipped with the reason elsewhere.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("datasets")

from taco.training import pretrain as train  # noqa: E402
from tests.test_train import _args, _blocks  # noqa: E402
from taco.training.pretrain_state import STATE_MARKER, state_damage
from taco.errors import EXIT_NO_SPACE


@pytest.fixture
def small_fs(request, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    size = request.param
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.parametrize("small_fs", ["10m", "7m"], indirect=True, ids=["torch.save", "safetensors"])
def test_full_disk_while_saving_a_state(small_fs, tmp_path, capsys):
    blocks = _blocks(tmp_path)
    state = small_fs / "state"
    out = tmp_path / "out" / "step-6"
    rc = train.main(_args(blocks, out, state))
    err = capsys.readouterr().err
    assert rc == EXIT_NO_SPACE, err[-2000:]
    assert "no space left on device" in err and str(state) in err
    # the earlier complete state stays, no half-written one is left, no budget was written
    kept = sorted(p.name for p in state.glob("checkpoint-*"))
    assert kept == ["checkpoint-2"], kept
    assert not list(state.glob("tmp-checkpoint-*")) and not out.exists()
    assert state_damage(state / "checkpoint-2", __import__("json").loads(
        (state / "checkpoint-2" / STATE_MARKER).read_text())) is None


# ------------------------------------------------------------------------------------------------
# taco corpus, taco pack: exit 4 naming the output, nothing half-written left
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus_and_tokenizer(tmp_path_factory):
    """A 400-document synthetic corpus (~140 KB) and a 200-word tokenizer trained on it; packed at
    L = 32 they give ~280 KB of blocks."""
    from taco.data.corpus import build_corpus
    from taco.data.tokenizer import build_tokenizer

    base = tmp_path_factory.mktemp("data")
    corpus = build_corpus("synthetic", base / "corpus", num_documents=400, seed=0)
    return corpus, build_tokenizer("train", base / "tok", corpus=corpus, vocab_size=200)


def _corpus(output: Path) -> int:
    from taco.data import corpus

    return corpus.main(["--source", "synthetic", "--num-documents", "400", "--output", str(output)])


def _pack(corpus_and_tokenizer, output: Path) -> int:
    from taco.data import packing

    corpus, tok = corpus_and_tokenizer
    return packing.main(["--corpus", str(corpus), "--tokenizer", str(tok), "--output", str(output),
                         "--max-seq-length", "32", "--validation-fraction", "0.05", "--seed", "0"])


def _assert_no_space(rc: int, err: str, output: Path) -> None:
    assert rc == EXIT_NO_SPACE, err[-2000:]
    assert "no space left on device" in err and str(output) in err and "Traceback" not in err
    assert not output.exists() and not list(output.parent.glob(output.name + ".tmp-*"))


@pytest.mark.parametrize("small_fs", ["100k"], indirect=True)
def test_full_disk_in_corpus_and_pack(small_fs, corpus_and_tokenizer, capsys):
    """On a 100 KB tmpfs: the corpus (~140 KB) fails in pyarrow's writer, the blocks in the train split."""
    _assert_no_space(_corpus(small_fs / "corpus"), capsys.readouterr().err, small_fs / "corpus")
    _assert_no_space(_pack(corpus_and_tokenizer, small_fs / "blocks"), capsys.readouterr().err, small_fs / "blocks")
    assert not list(small_fs.iterdir())


def test_simulated_full_disk_in_corpus_and_pack(corpus_and_tokenizer, tmp_path, monkeypatch, capsys):
    """ENOSPC raised where the writers raise it (runs without root): the corpus' Arrow file, and the
    tokenizer's copy into the blocks (``shutil.copytree`` raises ``shutil.Error``, a list of texts)."""
    import errno
    import shutil

    from taco.data import corpus, packing

    def full_write(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(corpus, "write_text_file", full_write)
    _assert_no_space(_corpus(tmp_path / "corpus"), capsys.readouterr().err, tmp_path / "corpus")

    def full_copytree(src, dst, *args, **kwargs):
        raise shutil.Error([(str(src), str(dst), f"[Errno 28] No space left on device: '{src}' -> '{dst}'")])

    monkeypatch.setattr(packing.shutil, "copytree", full_copytree)
    _assert_no_space(_pack(corpus_and_tokenizer, tmp_path / "blocks"), capsys.readouterr().err, tmp_path / "blocks")
    monkeypatch.undo()
    assert _pack(corpus_and_tokenizer, tmp_path / "blocks") == 0  # the same command, once there is space


def test_simulated_full_disk_in_tokenizer(corpus_and_tokenizer, tmp_path, monkeypatch, capsys):
    """`taco tokenizer` ends as the other data commands on a full disk (taco.data.command): exit EXIT_NO_SPACE
    naming its output, no folder left, not a traceback (it used to re-raise every OSError)."""
    import errno

    from taco.data import tokenizer
    from transformers import PreTrainedTokenizerFast

    def full_save(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(PreTrainedTokenizerFast, "save_pretrained", full_save)
    out = tmp_path / "tok"
    rc = tokenizer.main(["--kind", "train", "--corpus", str(corpus_and_tokenizer[0]), "--vocab-size", "200",
                         "--output", str(out)])
    _assert_no_space(rc, capsys.readouterr().err, out)
