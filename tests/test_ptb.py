"""PTB readers, .mrg -> dependency conversion, arc-standard oracle, parser task (normlab.tasks.parsing).

Counts are read from the real NLTK sample in ../shared/data/ptb (tests skip without it); the
format and oracle edge cases use small files written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from helpers import run_job
from normlab.data import ptb
from normlab.data.transitions import Configuration, is_projective, oracle, oracle_examples
from normlab.errors import DataError
from normlab.norms import NORMS, norm_factory

DP = "ptb/corpora/dependency_treebank"
MRG = "ptb/corpora/treebank/combined"


@pytest.fixture(scope="module")
def sample():
    """{"dp"|"mrg": {file stem: [Sentence]}, "conll": [Sentence]} of the real NLTK sample."""
    from conftest import data_root

    root = data_root()
    if not (root / "ptb").is_dir():
        pytest.skip(f"real data not found at {root / 'ptb'}")
    return {
        "dp": {p.stem: ptb.read_malt_tab(p) for p in sorted((root / DP).glob("*.dp"))},
        "mrg": {p.stem: ptb.read_mrg(p) for p in sorted((root / MRG).glob("*.mrg"))},
        "conll": ptb.read_conll(root / "ptb" / "derived" / "nltk_dependency_treebank.conllx"),
    }


def flat(by_file):
    return [s for stem in sorted(by_file) for s in by_file[stem]]


# ---------------------------------------------------------------- real files


def test_real_counts_dp_mrg_conll(sample):
    for fmt in ("dp", "mrg"):
        assert len(sample[fmt]) == 199, fmt
        sents = flat(sample[fmt])
        assert len(sents) == 3914, fmt
        assert sum(len(s.words) for s in sents) == 94_084, fmt  # traces removed from the .mrg trees
    assert len(sample["conll"]) == 3914
    # The derived CoNLL-X file is the .dp files joined in order: same words, tags and heads.
    for a, b in zip(flat(sample["dp"]), sample["conll"]):
        assert (a.words, a.tags, a.heads, b.labels) == (b.words, b.tags, b.heads, None)


def test_mrg_trees_become_single_root_projective_trees_close_to_dp(sample):
    agree = total = 0
    for a, b in zip(flat(sample["dp"]), flat(sample["mrg"])):
        assert b.words == a.words and b.tags == a.tags
        assert b.heads.count(0) == 1 and is_projective(b.heads)
        ptb.check_heads(b.heads, "x", [1] * len(b.heads))  # no cycle, heads in range
        agree += sum(x == y for x, y in zip(a.heads, b.heads))
        total += len(a.heads)
    # Collins heads vs the NLTK .dp conversion: they differ by convention on to-infinitives,
    # appositions and punctuation. Exact count, so any change of the head rules shows up here.
    assert (agree, total) == (79_827, 94_084)  # 84.85 %


def test_split_by_file_on_the_sample(sample, data_dir):
    files, note = ptb.split_by_file(sorted((data_dir / DP).glob("*.dp")))
    assert [len(files[s]) for s in ("train", "valid", "test")] == [159, 20, 20]
    assert files["valid"][0].name == "wsj_0160.dp" and files["test"][-1].name == "wsj_0199.dp"
    assert "wsj_0001-0159" in note
    fake = [Path(f"wsj_{s:02d}{i:02d}.mrg") for s in range(25) for i in (0, 1)]
    wsj, note = ptb.split_by_file(fake)  # sections 02, 22, 23 present -> the standard split
    assert len(wsj["train"]) == 40 and [p.name for p in wsj["test"]] == [
        "wsj_2300.mrg",
        "wsj_2301.mrg",
    ]
    assert "02-21" in note


def test_oracle_reproduces_every_gold_tree(sample):
    for s in flat(sample["dp"]):
        seq = oracle(s.heads, [0] * len(s.heads), 1)
        assert seq is not None and len(seq) == 2 * len(s.heads)
        c = Configuration(len(s.heads))
        for t in seq:
            assert c.legal()[min(t, 2)]
            c.apply(t, 1)
        assert c.terminal() and c.heads[1:] == s.heads


# ---------------------------------------------------------------- conversion and formats


def test_mrg_conversion_of_a_small_tree(tmp_path):
    f = tmp_path / "wsj_0001.mrg"
    f.write_text(
        "( (S (NP-SBJ-1 (NNP John) ) (VP (VBD saw) (NP (NP (DT the) (NN dog) ) (CC and) "
        "(NP (PRP her) ) ) (S (NP-SBJ (-NONE- *-1) ) ) ) (. .) ) )\n"
    )
    (s,) = ptb.read_mrg(f)
    assert s.words == ["John", "saw", "the", "dog", "and", "her", "."]
    # saw = root; John/./dog -> saw; the -> dog; coordination "dog and her" headed by dog.
    assert s.heads == [2, 0, 4, 2, 4, 4, 2]
    assert ptb.head_child("PP", ["IN", "NP"]) == 0 and ptb.head_child("NP", ["NP", "POS"]) == 1
    assert ptb.head_child("NP", ["NNS", "CC", "NNS"]) == 0  # Collins' coordination rule
    assert ptb.head_child("VP", ["TO", "VP"]) == 0  # Collins: "to" heads an infinitive VP


def test_conllu_comments_multiword_tokens_and_labels(tmp_path):
    f = tmp_path / "x.conllu"
    f.write_text(
        "# sent_id = 1\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n1\tdo\t_\tAUX\tVBP\t_\t3\taux\t_\t_\n"
        "2\tn't\t_\tPART\tRB\t_\t3\tadvmod\t_\t_\n3\tgo\t_\tVERB\tVB\t_\t0\troot\t_\t_\n"
        "3.1\tgo\t_\tVERB\t_\t_\t_\t_\t_\t_\n4\t!\t_\tPUNCT\t_\t_\t3\tpunct\t_\t_\n"
    )
    (s,) = ptb.read_conll(f)
    assert s.words == ["do", "n't", "go", "!"] and s.tags == ["VBP", "RB", "VB", "PUNCT"]
    assert s.heads == [3, 3, 0, 3] and s.labels == ["aux", "advmod", "root", "punct"]


CONLL_A = "1\ta\t_\tDT\tDT\t_\t2\t_\t_\t_\n"  # a CoNLL-X token line: "a", head 2


@pytest.mark.parametrize(
    "reader,text,match",
    [
        (
            ptb.read_conll,
            CONLL_A + "2\tb\t_\tNN\tNN\t_\t5\t_\t_\t_\n",
            r"bad\.txt:2: .*head 5.*0\.\.2",
        ),
        (ptb.read_conll, CONLL_A + "2\tb\t_\tNN\tNN\t_\t1\t_\t_\t_\n", r"bad\.txt:1: .*no root"),
        (
            ptb.read_malt_tab,
            "a\tDT\t0\nb\tNN\t3\nc\tNN\t2\n",
            r"bad\.txt:2: token 2 lies on a head cycle",
        ),
        (ptb.read_malt_tab, "a\tDT\t0\nb\tNN\tx\n", r"bad\.txt:2: head column is 'x'"),
        (ptb.read_conll, "1\ta\t_\tDT\n", r"bad\.txt:1: 4 columns"),
    ],
)
def test_bad_heads_raise_data_error_naming_file_and_line(tmp_path, reader, text, match):
    f = tmp_path / "bad.txt"
    f.write_text(text)
    with pytest.raises(DataError, match=match):
        reader(f)


def test_non_projective_and_multi_root_trees_have_no_oracle():
    crossing = [3, 4, 0, 3]  # arcs 1<-3 and 2<-4 cross
    assert not is_projective(crossing) and oracle(crossing, [0] * 4, 1) is None
    assert oracle([0, 0], [0, 0], 1) is None  # two roots: ROOT takes one dependent
    feats, seq = oracle_examples([1, 5, 6, 0], [1, 7, 8, 0], [2, 0], [0, 0], 1, False)
    # SHIFT, SHIFT, LEFT, RIGHT; the first configuration sees ROOT on the stack and both words.
    assert seq == [0, 0, 1, 2] and feats[0][:6] == [1, 0, 0, 5, 6, 0] and len(feats[0]) == 36


# ---------------------------------------------------------------- the task


def labeled_conll(tmp_path: Path) -> Path:
    """Three small labeled CoNLL-X splits; train holds one non-projective sentence."""
    sents = [
        [
            ("the", "DT", 2, "det"),
            ("cat", "NN", 3, "nsubj"),
            ("sat", "VBD", 0, "root"),
            (".", ".", 3, "punct"),
        ],
        [("dogs", "NNS", 2, "nsubj"), ("bark", "VBP", 0, "root"), ("loudly", "RB", 2, "advmod")],
    ]
    nonproj = [
        ("a", "DT", 3, "det"),
        ("b", "NN", 4, "dep"),
        ("c", "VB", 0, "root"),
        ("d", "RB", 3, "advmod"),
    ]
    root = tmp_path / "data" / "ptb"
    root.mkdir(parents=True)
    for split, rows in (("train", sents * 20 + [nonproj]), ("valid", sents), ("test", sents)):
        text = "".join(
            "".join(
                f"{i}\t{w}\t_\t{t}\t{t}\t_\t{h}\t{lb}\t_\t_\n"
                for i, (w, t, h, lb) in enumerate(s, 1)
            )
            + "\n"
            for s in rows
        )
        (root / f"{split}.conllx").write_text(text)
    return tmp_path / "data"


def test_labeled_conll_task_reports_las_and_skips_non_projective(tmp_path):
    files = [f"task.data.conll_files.{s}={s}.conllx" for s in ("train", "valid", "test")]
    summary, run_dir = run_job(
        ["task=ptb", "scale=smoke", "threads=1", "task.data.format=conll", *files],
        tmp_path,
        data_dir=labeled_conll(tmp_path),
    )
    assert summary["status"] == "completed", summary.get("error")
    assert summary["data"]["labeled"] and summary["data"]["oracle_skipped"] == {
        "train": 1,
        "valid": 0,
        "test": 0,
    }
    assert summary["data"]["sizes"] == {"train": 41, "valid": 2, "test": 2}
    assert {"loss", "uas", "las"} <= set(summary["test"]) and summary["test"]["las"] <= summary[
        "test"
    ]["uas"]
    pred = (run_dir / "test_predictions.conllx").read_text().strip().split("\n\n")
    assert len(pred) == 2 and all(len(block.splitlines()) in (3, 4) for block in pred)


def gold_configs(task, split):
    sp = task.splits[split]
    configs = []
    for i in range(len(sp["offsets"]) - 1):
        a, b = int(sp["offsets"][i]), int(sp["offsets"][i + 1])
        heads, labels = sp["heads"][a:b].tolist(), sp["labels"][a:b].tolist()
        c = Configuration(b - a)
        for t in oracle(heads, labels, len(task.label_names)):
            c.apply(t, len(task.label_names))
        configs.append(c)
    return configs


def test_gold_oracle_parse_scores_100_and_trivial_baseline_scores_low(tmp_path, data_dir):
    from omegaconf import OmegaConf

    from helpers import TEST_CACHE
    from normlab.tasks.parsing import PTBParsingTask

    cfg = OmegaConf.load(Path(__file__).parents[1] / "normlab" / "configs" / "task" / "ptb.yaml")
    task = PTBParsingTask(cfg, data_dir / "ptb", TEST_CACHE)
    task.setup()
    assert task.data_info["sizes"] == {"train": 3396, "valid": 273, "test": 245}
    assert task.data_info["tokens"] == {"train": 81_793, "valid": 6327, "test": 5964}
    assert (
        task.splits["train"]["trans"].numel() == 2 * 81_793
    )  # every tree reachable: 2n transitions
    for split in ("valid", "test"):
        assert task.attachment_scores(split, gold_configs(task, split)) == {"uas": 100.0}
    # Every word attached to its right neighbour (last word to ROOT): the baseline a parser must beat.
    chain = gold_configs(task, "test")
    for c in chain:
        c.heads[1:] = list(range(2, c.n + 1)) + [0]
    assert task.attachment_scores("test", chain)["uas"] < 40.0
    # The report's right-neighbour baseline is the same number, computed from the gold arrays alone.
    from normlab.tasks.trivial import right_neighbour_uas

    sp = task.splits["test"]
    assert right_neighbour_uas(sp["heads"], sp["offsets"], sp["punct"]) == pytest.approx(
        task.attachment_scores("test", chain)["uas"], abs=1e-12
    )
    # A random model still parses every sentence into a single-root tree.
    model = task.build_model(norm_factory("layernorm"))
    parses = task._parse(model.eval(), "valid")
    assert all(c.terminal() and c.heads[1:].count(0) == 1 for c in parses)


def test_train_batches_are_a_function_of_epoch_and_seed(tmp_path, data_dir):
    from omegaconf import OmegaConf

    from helpers import TEST_CACHE
    from normlab.tasks.parsing import PTBParsingTask

    cfg = OmegaConf.load(Path(__file__).parents[1] / "normlab" / "configs" / "task" / "ptb.yaml")
    cfg.data.limit = {"train": 100, "valid": 10, "test": 10}
    task = PTBParsingTask(cfg, data_dir / "ptb", TEST_CACHE)
    task.setup()
    a, b, c = task.train_batches(1, 7), task.train_batches(1, 7), task.train_batches(2, 7)
    assert torch.equal(a[0][0], b[0][0]) and not torch.equal(a[0][0], c[0][0])
    assert sum(len(x[1]) for x in a) == task.splits["train"]["trans"].numel()
    assert "SUBSET" in task.data_info["subset"]


@pytest.mark.parametrize("norm", list(NORMS))
def test_smoke_run_per_norm_writes_curves_and_summary(tmp_path, data_dir, norm):
    summary, run_dir = run_job(
        ["task=ptb", f"norm={norm}", "scale=smoke", "threads=1"], tmp_path, data_dir=data_dir
    )
    assert summary["status"] == "completed", summary.get("error")
    curves = [json.loads(x) for x in (run_dir / "curves.jsonl").read_text().splitlines()]
    assert {r["split"] for r in curves} == {"train", "valid", "test"}
    assert all("uas" in r for r in curves if r["split"] != "train")
    assert 0.0 <= summary["test"]["uas"] <= 100.0 and summary["data"]["sizes"]["train"] == 200
    if norm != "none":  # the gradient probe sees the norm of each of the 3 hidden layers
        probed = {k.split("/")[1] for r in curves for k in r if k.startswith("grad/")}
        assert {"norms.0", "norms.1", "norms.2"} <= probed


def test_mrg_format_runs_through_the_task(tmp_path, data_dir):
    summary, _ = run_job(
        ["task=ptb", "scale=smoke", "threads=1", "task.data.format=mrg"],
        tmp_path,
        data_dir=data_dir,
    )
    assert summary["status"] == "completed", summary.get("error")
    assert (
        summary["data"]["format"] == "mrg" and summary["data"]["tokens"]["train"] == 4783
    )  # = the .dp smoke subset


def test_bad_head_in_task_data_stops_the_run_before_writing(tmp_path):
    data = labeled_conll(tmp_path)
    bad = data / "ptb" / "valid.conllx"
    bad.write_text(
        bad.read_text().replace("3\tsat\t_\tVBD\tVBD\t_\t0", "3\tsat\t_\tVBD\tVBD\t_\t9", 1)
    )
    files = [f"task.data.conll_files.{s}={s}.conllx" for s in ("train", "valid", "test")]
    with pytest.raises(DataError, match=r"valid\.conllx:3: token 3 has head 9"):
        run_job(
            ["task=ptb", "scale=smoke", "task.data.format=conll", *files], tmp_path, data_dir=data
        )
    assert not (tmp_path / "runs" / "job").exists()
