"""Translation: parallel readers on the real files, BPE, BLEU against sacreBLEU, the encoder-decoder,
greedy/beam search, and smoke/mini runs of iwslt14_de_en and iwslt15_en_vi."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from helpers import compose_cfg, run_job
from normlab.config import ConfigError
from normlab.data.bpe import JointBPE, learn_cached, remove_bpe
from normlab.data.parallel import choose_splits, parse_stem, read_lines, read_parallel
from normlab.errors import DataError
from normlab.models.search import SearchConfig, beam_search, greedy
from normlab.models.seq2seq import TransformerSeq2Seq
from normlab.models.transformer import TransformerConfig
from normlab.norms import NORMS, norm_factory
from normlab.tasks.bleu import tokenized_bleu
from normlab.tasks.translation import TranslationTask

COMPONENTS = {
    "IWSLT14.TED.dev2010": 887,
    "IWSLT14.TEDX.dev2012": 1165,
    "IWSLT14.TED.tst2010": 1565,
    "IWSLT14.TED.tst2011": 1433,
    "IWSLT14.TED.tst2012": 1700,
}


# --- readers -------------------------------------------------------------------------------------
def test_iwslt14_real_counts(data_dir):
    tmp = data_dir / "iwslt14_de_en" / "tmp"
    valid = read_parallel(tmp / "valid.de", tmp / "valid.en")
    test = read_parallel(tmp / "test.de", tmp / "test.en")
    assert (len(valid[0]), len(test[0])) == (7283, 6750)
    joined = {"de": [], "en": []}
    for part, n in COMPONENTS.items():  # test = the five components, in prepare-iwslt14.sh's order
        de, en = read_parallel(tmp / f"{part}.de-en.de", tmp / f"{part}.de-en.en")
        assert len(de) == n
        joined["de"] += de
        joined["en"] += en
    assert joined["de"] == test[0] and joined["en"] == test[1]


def test_iwslt15_real_counts_bom_and_missing_newline(data_dir):
    root = data_dir / "iwslt15_en_vi"
    assert (root / "tst2013.en").read_bytes().startswith(b"\xef\xbb\xbf")
    assert not (root / "tst2013.en").read_bytes().endswith(b"\n")
    en12, vi12 = read_parallel(root / "tst2012.en", root / "tst2012.vi")
    en13, vi13 = read_parallel(root / "tst2013.en", root / "tst2013.vi")
    assert (len(en12), len(en13)) == (1553, 1268)
    assert not en13[0].startswith("\ufeff") and not vi13[0].startswith("\ufeff")
    raw_last = (root / "tst2013.vi").read_bytes().decode("utf-8").rsplit("\n", 1)[1]
    assert vi13[-1] == raw_last and raw_last.strip()


def test_read_lines_edge_cases(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(
        b"\xef\xbb\xbfa b\r\nc\xc2\x85d\n\ne"
    )  # BOM, CRLF, U+0085 inside, empty line, no final \n
    assert read_lines(p) == ["a b", "c\u0085d", "", "e"]
    p.write_bytes(b"a\n")
    assert read_lines(p) == ["a"]


def test_bad_parallel_files_name_files_and_counts(tmp_path):
    de, en = tmp_path / "train.de", tmp_path / "train.en"
    de.write_text("a\nb\nc\n")
    en.write_text("x\ny\n")
    with pytest.raises(DataError, match=r"train\.de has 3 lines but .*train\.en has 2"):
        read_parallel(de, en)
    en.unlink()
    with pytest.raises(
        DataError, match=r"missing .*train\.en \(its other side .*train\.de exists\)"
    ):
        read_parallel(de, en)
    en.write_text("")
    with pytest.raises(DataError, match=r"train\.en is empty"):
        read_parallel(de, en)


def test_split_choice_and_slices(tmp_path):
    d = OmegaConf.create(
        {
            "layout": "stanford",
            "src": "en",
            "tgt": "vi",
            "splits": {"train": "train", "valid": "tst2012", "test": "tst2013"},
            "subset": {"train": "tst2012[:3]", "valid": "tst2012[3:]", "test": "tst2013"},
            "subset_note": "demo subset",
        }
    )
    assert parse_stem("tst2012[1253:]") == ("tst2012", slice(1253, None))
    chosen, note = choose_splits(tmp_path, d, "HOW")
    assert chosen["train"] == "tst2012[:3]" and "demo subset" in note and "train.en" in note
    for lang in ("en", "vi"):
        (tmp_path / f"train.{lang}").write_text("a\n")
    assert choose_splits(tmp_path, d, "HOW") == (dict(d.splits), None)
    (tmp_path / "train.vi").unlink()
    d.subset = None
    with pytest.raises(DataError, match=r"train\.en / .*train\.vi \(the train split\)\. HOW"):
        choose_splits(tmp_path, d, "HOW")


# --- BPE -----------------------------------------------------------------------------------------
def test_bpe_merges_roundtrip_and_cache(data_dir, tmp_path, monkeypatch):
    lines = read_lines(data_dir / "iwslt14_de_en" / "tmp" / "IWSLT14.TED.tst2011.de-en.en")
    bpe = JointBPE.learn(lines, 500)
    assert len(bpe) == 500  # exactly the asked merge count
    pieces = bpe.encode(lines)
    assert [remove_bpe(" ".join(p)) for p in pieces] == [" ".join(x.split()) for x in lines]
    assert [sum(not p.endswith("@@") for p in ps) for ps in pieces] == [
        len(x.split()) for x in lines
    ]
    assert bpe.encode(["ΩΨ Ω"]) == [
        ["Ω@@", "Ψ", "Ω"]
    ]  # unseen characters pass through, as in subword-nmt
    assert JointBPE.from_codes(bpe.to_codes()).merges == bpe.merges
    src = tmp_path / "src.txt"
    src.write_text("\n".join(lines))
    first = learn_cached(tmp_path, "t", [src], lines, 200)
    monkeypatch.setattr(JointBPE, "learn", lambda *a, **k: pytest.fail("the cache was not used"))
    assert learn_cached(tmp_path, "t", [src], lines, 200).merges == first.merges


# --- BLEU ----------------------------------------------------------------------------------------
def test_bleu_equals_sacrebleu_cli(data_dir, tmp_path):
    refs = read_lines(data_dir / "iwslt14_de_en" / "tmp" / "IWSLT14.TED.dev2010.de-en.en")
    hyps = [
        " ".join(w for i, w in enumerate(r.split()) if i % 4 != 1) for r in refs
    ]  # drop every 4th word
    (tmp_path / "ref").write_text("\n".join(refs) + "\n")
    (tmp_path / "hyp").write_text("\n".join(hyps) + "\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sacrebleu",
            str(tmp_path / "ref"),
            "-i",
            str(tmp_path / "hyp"),
            "-tok",
            "none",
            "-w",
            "4",
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    cli = json.loads(out.stdout)
    score, signature = tokenized_bleu(hyps, refs)
    assert round(score.score, 4) == cli["score"]
    assert "tok:none" in signature and 0 < score.score < 100


# --- model and search ----------------------------------------------------------------------------
def tiny_model(norm="layernorm", pre=True, V=37, seed=0):
    torch.manual_seed(seed)
    cfg = TransformerConfig(
        d_model=16, heads=2, ffn_dim=32, layers=2, dropout=0.0, normalize_before=pre
    )
    return TransformerSeq2Seq(V, V, 0, 3, cfg, norm_factory(norm), max_positions=64).eval()


def random_batch(B=6, V=37, seed=1):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(2, 12, (B,), generator=g)
    src = torch.zeros(B, int(lens.max()), dtype=torch.long)
    for i, n in enumerate(lens.tolist()):
        src[i, : n - 1] = torch.randint(4, V, (n - 1,), generator=g)
        src[i, n - 1] = 3
    return src


@pytest.mark.parametrize(
    "norm,pre", [("layernorm", True), ("layernorm", False), ("adanorm", True), ("dyt", True)]
)
def test_incremental_decoding_equals_full_forward(norm, pre):
    model, src = tiny_model(norm, pre), random_batch()
    prev = torch.cat([torch.full((src.size(0), 1), 3), torch.randint(4, 37, (src.size(0), 7))], 1)
    with torch.no_grad():
        full = F.log_softmax(model(src, prev).float(), -1)
        state = model.start(src)
        steps = torch.stack([model.step(prev[:, t], state) for t in range(prev.size(1))], 1)
    torch.testing.assert_close(steps, full, rtol=1e-5, atol=1e-5)


def test_every_norm_position_comes_from_the_factory():
    made = []

    def factory(dim):
        made.append(dim)
        return torch.nn.Identity()

    cfg = TransformerConfig(d_model=16, heads=2, ffn_dim=32, layers=3, normalize_before=True)
    model = TransformerSeq2Seq(20, 20, 0, 3, cfg, factory, decoder_layers=2)
    assert len(made) == 3 * 2 + 2 * 3 + 2  # sublayer norms + two final norms
    made.clear()
    TransformerSeq2Seq(
        20,
        20,
        0,
        3,
        TransformerConfig(d_model=16, heads=2, layers=3, normalize_before=False),
        factory,
        decoder_layers=2,
    )
    assert len(made) == 3 * 2 + 2 * 3  # post-norm: no final norms
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in model.modules())
    assert model.src_embed is model.tgt_embed and model.out_proj is None  # --share-all-embeddings


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_one_equals_greedy(seed):
    model, src = tiny_model(seed=seed), random_batch(B=9, seed=seed)
    c = SearchConfig(beam=1, max_len_a=1.0, max_len_b=4, max_len=30)
    assert beam_search(model, src, c) == greedy(model, src, c)


class MarkovToy:
    """p(next | last) from a table: greedy takes A (0.55) and ends worse than beam's B C."""

    pad, eos = 0, 1
    table = {
        1: {2: 0.55, 3: 0.45},
        2: {4: 0.35, 3: 0.33, 1: 0.32},
        3: {4: 0.98, 1: 0.02},
        4: {1: 0.99, 2: 0.01},
    }

    def start(self, src, beam=1):
        return {}

    def step(self, last, state):
        out = torch.full((last.numel(), 5), -math.inf)
        for r, t in enumerate(last.tolist()):
            for k, p in self.table[t].items():
                out[r, k] = math.log(p)
        return out

    def reorder(self, state, order):
        pass


def test_beam_search_finds_what_greedy_misses():
    src = torch.tensor([[2, 2, 1]])
    c = SearchConfig(beam=2, max_len_b=5)
    assert greedy(MarkovToy(), src, SearchConfig(beam=1, max_len_b=5)) == [[2, 4]]
    assert beam_search(MarkovToy(), src, c) == [[3, 4]]
    assert greedy(MarkovToy(), src, SearchConfig(beam=1, max_len_b=1)) == [
        [2]
    ]  # forced </s> at the limit


def test_label_smoothed_loss_is_fairseqs():
    task = TranslationTask.__new__(TranslationTask)
    task.pad, task.cfg = 0, OmegaConf.create({"criterion": {"label_smoothing": 0.1}})
    model = tiny_model()
    src = random_batch()
    tgt = torch.tensor([[5, 6, 3], [7, 3, 0], [8, 9, 3], [3, 0, 0], [4, 5, 3], [6, 3, 0]])
    prev = torch.cat([torch.full((6, 1), 3), tgt[:, :-1]], 1)
    loss, n = task.loss(model, (src, prev, tgt))
    lp = F.log_softmax(model(src, prev), -1)[tgt.ne(0)]
    nll, smooth = -lp.gather(1, tgt[tgt.ne(0)][:, None]).squeeze(1), -lp.sum(1)
    eps_i = 0.1 / 36
    assert n == 14
    torch.testing.assert_close(loss, ((0.9 - eps_i) * nll + eps_i * smooth).mean())
    task.cfg.criterion.label_smoothing = 0.0
    torch.testing.assert_close(
        task.loss(model, (src, prev, tgt))[0],
        F.cross_entropy(model(src, prev).transpose(1, 2), tgt, ignore_index=0),
    )


# --- tasks end to end ----------------------------------------------------------------------------
def test_paper_scale_is_transformer_iwslt_de_en(tmp_path):
    cfg = compose_cfg(["task=iwslt14_de_en", "scale=paper"], tmp_path)
    m, t = cfg.task.model, cfg.task.train
    assert (
        m.d_model,
        m.ffn_dim,
        m.heads,
        m.layers,
        m.normalize_before,
        m.share_all_embeddings,
    ) == (512, 1024, 4, 6, True, True)
    assert (
        t.lr,
        list(t.betas),
        t.warmup_steps,
        t.weight_decay,
        m.dropout,
        cfg.task.criterion.label_smoothing,
        cfg.task.data.bpe.merges,
        cfg.task.eval.beam,
    ) == (1.5e-3, [0.9, 0.98], 8000, 1e-4, 0.3, 0.1, 10000, 5)


def test_paper_scale_without_train_names_the_file_and_script(data_dir, tmp_path):
    with pytest.raises(DataError, match=r"tmp/train\.de .*normlab-data prepare iwslt14_de_en"):
        run_job(["task=iwslt14_de_en", "scale=paper"], tmp_path, data_dir)


def test_select_metric_needs_valid_bleu(data_dir, tmp_path):
    with pytest.raises(ConfigError, match="valid_bleu"):
        run_job(
            ["task=iwslt14_de_en", "scale=smoke", "task.train.select=metric"], tmp_path, data_dir
        )
    with pytest.raises(
        ConfigError, match="17,192 source and 7,710 target"
    ):  # before anything is written
        run_job(["task=iwslt15_en_vi", "scale=smoke", "task.data.vocab=word"], tmp_path, data_dir)
    assert not (tmp_path / "runs" / "job").exists()


def _check_run(summary, run_dir, n_test):
    assert summary["status"] == "completed", summary.get("error")
    rows = [json.loads(x) for x in (run_dir / "curves.jsonl").read_text().splitlines()]
    assert {r["split"] for r in rows} == {"train", "valid", "test"}
    assert len(read_lines(run_dir / "test.hyp.txt")) == n_test
    assert summary["test"]["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:none")
    assert "tok:13a" in summary["test"]["sacrebleu_signature"]
    assert "subset" in summary["data"]["subset"] and summary["data"]["source"] == "real"
    return rows


@pytest.mark.parametrize("norm", sorted(NORMS))
def test_smoke_run_per_norm(norm, data_dir, tmp_path):
    summary, run_dir = run_job(
        ["task=iwslt14_de_en", "scale=smoke", f"norm={norm}", "threads=1"], tmp_path, data_dir
    )
    _check_run(summary, run_dir, 16)
    assert summary["data"]["sizes"] == {"train": 256, "valid": 32, "test": 16}


def test_smoke_run_iwslt15(data_dir, tmp_path):
    summary, run_dir = run_job(
        [
            "task=iwslt15_en_vi",
            "scale=smoke",
            "threads=1",
            "task.eval.valid_bleu=true",
            "task.train.select=metric",
        ],
        tmp_path,
        data_dir,
    )
    rows = _check_run(summary, run_dir, 16)
    assert all("bleu" in r for r in rows if r["split"] == "valid")


def test_smoke_run_stanford_word_vocabularies(data_dir, tmp_path):
    """The paper-scale En-Vi setting: the release's vocab.en/vocab.vi, separate embeddings."""
    summary, run_dir = run_job(
        [
            "task=iwslt15_en_vi",
            "scale=smoke",
            "threads=1",
            "task.data.vocab=word",
            "task.model.share_all_embeddings=false",
        ],
        tmp_path,
        data_dir,
    )
    _check_run(summary, run_dir, 16)
    assert summary["data"]["vocab"] == {"src": 17191 + 1, "tgt": 7709 + 1}  # + <pad>
    assert summary["data"]["segmentation"] == "word vocabularies vocab.en/vocab.vi"


@pytest.mark.slow
@pytest.mark.parametrize("task,n_test", [("iwslt14_de_en", 1565), ("iwslt15_en_vi", 1268)])
def test_mini_run_learns(task, n_test, data_dir, tmp_path):
    summary, run_dir = run_job(
        [f"task={task}", "scale=mini", "norm=layernorm", "threads=1"], tmp_path, data_dir
    )
    rows = _check_run(summary, run_dir, n_test)
    valid = [r["loss"] for r in rows if r["split"] == "valid"]
    assert valid[-1] < valid[0] - 0.5
    # Nonzero without smoothing: every n-gram order up to 4 has matches.
    assert (
        summary["test"]["bleu"] > 0.5
        and min(map(float, summary["test"]["bleu_precisions"].split("/"))) > 0
    )


def test_mini_data_info_counts_the_pairs_training_uses(data_dir, tmp_path):
    # IWSLT15 mini trains on tst2012[:1253]; train_max_len=64 drops the pairs longer than 64 BPE
    # tokens (93 of them), so sizes.train counts the 1,160 pairs training sees, not the 1,253 read.
    from helpers import TEST_CACHE

    cfg = compose_cfg(["task=iwslt15_en_vi", "scale=mini"], tmp_path, data_dir)
    task = TranslationTask(cfg.task, data_dir / "iwslt15_en_vi", TEST_CACHE)
    task.setup()
    info = task.data_info
    assert info["train_pairs_read"] == 1253 and info["train_pairs_over_max_len"] == 93
    assert info["sizes"]["train"] == 1253 - 93 == len(task.train_index)
    assert info["sizes"]["valid"] == 300 and info["sizes"]["test"] == 1268
