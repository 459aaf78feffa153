"""normlab-export: every task's model reloads in a fresh interpreter without normlab's data, task
or training code, and reproduces the checkpoint's outputs, as a module and as a torch.export program."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from conftest import REPO, SMOKE_RUNS

from normlab.export import main
from normlab.run.restore import restore

# Run in a fresh interpreter: importing any of these modules fails, so the export cannot lean on them.
LOADER = r"""
import importlib.abc, json, sys
BLOCKED = ("normlab.run.trainer", "normlab.tasks", "normlab.data", "normlab.run.runner", "normlab.run.restore")

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"{name} is training code")
        return None

sys.meta_path.insert(0, Block())
import torch
folder = sys.argv[1]
example = torch.load(f"{folder}/example.pt", weights_only=True)
inputs = example["inputs"]
result = {}
# torch alone first: normlab is not imported at all
program = torch.export.load(f"{folder}/model.pt2").module()
result["program_full"] = program(*inputs).tolist()
result["program_part"] = program(*(x[:3] for x in inputs)).tolist()
assert not any(m.startswith("normlab") for m in sys.modules), sorted(m for m in sys.modules if "normlab" in m)
from normlab.models.spec import load_export
model = load_export(folder)
with torch.no_grad():
    result["full"] = model(*inputs).tolist()
    result["part"] = model(*(x[:3] for x in inputs)).tolist()
    result["reference"] = load_export(folder, impl="reference")(*inputs).tolist()
assert not any(m.startswith(BLOCKED) for m in sys.modules)
print(json.dumps(result))
"""


def load_fresh(folder) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return {k: torch.tensor(v) for k, v in json.loads(out.stdout.splitlines()[-1]).items()}


@pytest.mark.parametrize("key", [k for k in SMOKE_RUNS if k != "rt_late"])
def test_export_reproduces_the_checkpoint_without_training_code(smoke_runs, key, tmp_path):
    summary, run_dir = smoke_runs[key]
    folder = tmp_path / "export"
    assert main([str(run_dir), "--out", str(folder)]) == 0
    meta = json.loads((folder / "model.json").read_text())
    assert meta["source"]["step"] == summary["best_step"] and meta["task"] == summary["task"]
    assert set(meta["files"]) <= {p.name for p in folder.iterdir()}
    assert (folder / "README.md").read_text().count("```python") == 2
    # the checkpoint's outputs, computed here with the task and training code
    r = restore(run_dir, "best")
    inputs = tuple(r.task.example_inputs(8))
    with torch.no_grad():
        expected = r.model(*inputs)
    example = torch.load(folder / "example.pt", weights_only=True)
    assert all(torch.equal(a, b) for a, b in zip(example["inputs"], inputs))
    assert "file" in meta["program"], meta["program"]  # every task's model traces today
    module = load_fresh(folder)
    torch.testing.assert_close(module["full"], expected, rtol=0, atol=1e-6)
    torch.testing.assert_close(module["reference"], expected, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        part = r.model(*(x[:3] for x in inputs))
    torch.testing.assert_close(module["part"], part, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(module["program_full"], expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(module["program_part"], part, rtol=1e-5, atol=1e-5)


def test_translation_export_carries_vocabularies_and_bpe(smoke_runs, tmp_path):
    summary, run_dir = smoke_runs["iwslt14_de_en"]
    folder = tmp_path / "export"
    assert main([str(run_dir), "--out", str(folder)]) == 0
    meta = json.loads((folder / "model.json").read_text())
    src = (folder / "src_vocab.txt").read_text().splitlines()
    assert len(src) == summary["data"]["vocab"]["src"] == meta["model"]["kwargs"]["src_vocab"]
    assert (
        src[meta["model"]["kwargs"]["pad"]] == "<pad>"
        and src[meta["model"]["kwargs"]["eos"]] == "</s>"
    )
    codes = (folder / "bpe.codes").read_text().splitlines()
    assert codes[0] == "#version: 0.2" and len(codes) > 100
    assert meta["program"]["dynamic"] == "batch and length"


def test_a_classifiers_labels_name_its_classes_in_the_readers_order(smoke_runs, tmp_path):
    """labels.json says what each output column means: RT's reader gives rt-polarity.neg id 0."""
    from normlab.data.classification import read_rt

    _, run_dir = smoke_runs["rt"]
    folder = tmp_path / "export"
    assert main([str(run_dir), "--out", str(folder)]) == 0
    labels = json.loads((folder / "labels.json").read_text())
    assert labels["classes"] == 2 and labels["names"] == {"0": "negative", "1": "positive"}
    r = restore(run_dir, "best")
    splits, _ = read_rt(r.task.data_dir)
    texts, ids = splits["train"]
    neg = {
        line.strip()
        for line in (r.task.data_dir / "rt-polarity.neg").read_text(errors="replace").splitlines()
    }
    first = next(i for i, t in enumerate(texts) if t.strip() in neg)
    assert ids[first] == 0


def test_export_refuses_a_folder_that_is_not_empty_and_a_run_without_checkpoint(
    smoke_runs, tmp_path, capsys
):
    _, run_dir = smoke_runs["rt"]
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    assert main([str(run_dir), "--out", str(tmp_path / "taken")]) == 2
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"
    assert main([str(tmp_path / "taken"), "--out", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "not empty" in err[0] and "config.yaml: missing" in err[1]
    assert not (tmp_path / "new").exists()


def test_a_failed_export_leaves_nothing_that_blocks_the_retry(smoke_runs, tmp_path, monkeypatch):
    import normlab.export as export_mod

    _, run_dir = smoke_runs["rt"]
    out = tmp_path / "model"

    def crash(*args, **kwargs):
        raise RuntimeError("killed while writing the program")

    monkeypatch.setattr(export_mod, "export_program", crash)
    with pytest.raises(RuntimeError):
        main([str(run_dir), "--out", str(out)])
    assert not out.exists()  # no partial folder where the model goes
    monkeypatch.undo()
    assert main([str(run_dir), "--out", str(out)]) == 0  # the retry is not refused as "not empty"
    assert (out / "model.json").exists() and (out / "model.pt2").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no hidden leftovers
