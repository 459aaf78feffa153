"""The fairseq plugin (make test-fairseq, in the fairseq environment of make fairseq-env):
fairseq's own transformer_iwslt_de_en gets the chosen norm at every norm position, and a short
fairseq-train on a binarized real IWSLT14 subset runs with it."""

import re
import subprocess
import sys

import pytest
import torch

fairseq = pytest.importorskip("fairseq")

from conftest import USER_DIR  # noqa: E402

from normlab.norms import build_norm  # noqa: E402

# The IWSLT14 files here have no train split: fairseq's valid (every 23rd training pair, Moses-
# tokenized, lowercased, pre-BPE) is the subset's train, TED.dev2010 its valid; word-level vocabulary.
N_TRAIN, N_VALID = 2000, 200


@pytest.fixture(scope="module")
def data_bin(iwslt14, tmp_path_factory):
    raw = tmp_path_factory.mktemp("raw")
    for lang in ("de", "en"):
        train = (iwslt14 / f"valid.{lang}").read_text(encoding="utf-8").splitlines()[:N_TRAIN]
        valid = (
            (iwslt14 / f"IWSLT14.TED.dev2010.de-en.{lang}")
            .read_text(encoding="utf-8")
            .splitlines()[:N_VALID]
        )
        (raw / f"train.{lang}").write_text("\n".join(train) + "\n", encoding="utf-8")
        (raw / f"valid.{lang}").write_text("\n".join(valid) + "\n", encoding="utf-8")
    out = raw.parent / "data-bin"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fairseq_cli.preprocess",
            "--source-lang",
            "de",
            "--target-lang",
            "en",
            "--trainpref",
            str(raw / "train"),
            "--validpref",
            str(raw / "valid"),
            "--destdir",
            str(out),
            "--joined-dictionary",
            "--thresholdsrc",
            "2",
            "--workers",
            "1",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


def build_model(data_bin, norm, options="", *extra):
    from fairseq import options as fs_options
    from fairseq import tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from fairseq.utils import import_user_module

    parser = fs_options.get_training_parser()
    args = fs_options.parse_args_and_arch(
        parser,
        [
            str(data_bin),
            "--user-dir",
            str(USER_DIR),
            "--task",
            "normlab_translation",
            "--arch",
            "transformer_iwslt_de_en",
            "--norm",
            norm,
            "--norm-options",
            options,
            *extra,
        ],
    )
    import_user_module(args)
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    return task.build_model(cfg.model)


@pytest.mark.parametrize(
    "norm,options", [("adanorm", "C=2"), ("layernorm_simple", ""), ("dyt", "alpha_init=0.5")]
)
def test_every_norm_of_fairseqs_model_is_the_chosen_variant(data_bin, norm, options):
    model = build_model(data_bin, norm, options)
    variant = type(build_norm(norm, 8))
    norms = {n: m for n, m in model.named_modules() if n.endswith("layer_norm")}
    # transformer_iwslt_de_en (post-norm, 6 + 6 layers): 2 norms per encoder layer, 3 per decoder layer
    assert len(norms) == 6 * 2 + 6 * 3
    assert all(type(m) is variant for m in norms.values()), {n: type(m) for n, m in norms.items()}
    assert not [n for n, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)]
    if norm == "adanorm":
        assert all(getattr(m, "C", None) == 2 for m in norms.values())


def attention_projections(model):
    from fairseq.modules import MultiheadAttention

    mods = [m for m in model.modules() if isinstance(m, MultiheadAttention)]
    return [(p, getattr(m, p)) for m in mods for p in ("q_proj", "k_proj", "v_proj", "out_proj")]


def test_attention_init_torch_gives_fairseqs_attention_pytorchs_linear_init(data_bin):
    d = 512  # transformer_iwslt_de_en
    bound = (
        1 / d**0.5
    )  # PyTorch's Linear: Kaiming-uniform a=sqrt(5), bias uniform, both 1/sqrt(fan_in)
    torch.manual_seed(0)
    own = attention_projections(build_model(data_bin, "layernorm"))
    torch.manual_seed(0)
    reset = attention_projections(
        build_model(data_bin, "layernorm", "", "--attention-init", "torch")
    )
    # 6 encoder self-attentions, 6 decoder self- and 6 cross-attentions
    assert len(own) == len(reset) == 18 * 4
    # fairseq's own: xavier q/k/v (bound sqrt(6/2d)/sqrt(2) = 0.054) and out_proj (0.077), bias 0
    assert max(float(lin.weight.abs().max()) for _, lin in own) > 1.2 * bound
    assert all(float(lin.bias.abs().max()) == 0 for p, lin in own if p == "out_proj")
    for _, lin in reset:
        w, b = lin.weight.detach(), lin.bias.detach()
        assert float(w.abs().max()) <= bound and float(b.abs().max()) <= bound
        # uniform on [-bound, bound]: std bound/sqrt(3)
        assert abs(float(w.std()) - bound / 3**0.5) < 0.05 * bound
        assert float(b.abs().max()) > 0.5 * bound
    with pytest.raises(ValueError, match="--attention-init 'xavier': choose fairseq or torch"):
        build_model(data_bin, "layernorm", "", "--attention-init", "xavier")


def test_bad_norm_options_are_refused(data_bin):
    with pytest.raises(ValueError, match="is not KEY=VALUE"):
        build_model(data_bin, "adanorm", "C2")
    with pytest.raises(ValueError):
        build_model(data_bin, "no_such_norm")


def test_short_fairseq_train_runs_with_adanorm(data_bin, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "fairseq_cli.train",
        str(data_bin),
        "--user-dir",
        str(USER_DIR),
        "--task",
        "normlab_translation",
        "--arch",
        "transformer_iwslt_de_en",
        "--norm",
        "adanorm",
        "--norm-options",
        "C=2",
        "--share-decoder-input-output-embed",
        "--optimizer",
        "adam",
        "--adam-betas",
        "(0.9, 0.98)",
        "--lr",
        "5e-4",
        "--lr-scheduler",
        "inverse_sqrt",
        "--warmup-updates",
        "10",
        "--dropout",
        "0.3",
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        "0.1",
        "--max-tokens",
        "2048",
        "--max-update",
        "12",
        "--validate-interval-updates",
        "12",
        "--cpu",
        "--num-workers",
        "0",
        "--seed",
        "1",
        "--no-save",
        "--log-format",
        "simple",
        "--log-interval",
        "4",
        "--validate-interval",
        "1",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    assert "AdaNorm" in log or "adanorm" in log  # the model printout shows the swapped norms
    losses = [float(x) for x in re.findall(r"valid on 'valid' subset \| loss ([0-9.]+)", log)]
    print("fairseq valid loss after 12 updates:", losses)  # reported by make test-fairseq -s
    assert losses and 0 < losses[-1] < 20, log[-3000:]
