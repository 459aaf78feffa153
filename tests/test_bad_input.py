"""The bad-input catalogue: each case stops before training with a message that names the file,
line or key and the fix, the CLI exits non-zero, and an existing run directory is untouched.
(Parallel corpora, IDX files and CoNLL heads are covered by the translation, MNIST and PTB tests.)"""

import io
import shutil
import tarfile

import pytest

from helpers import run_cli, run_job
from normlab.errors import ConfigError, DataError
from normlab.hints import explain_unknown_keys

RT = ["task=rt", "scale=smoke", "threads=1"]  # one thread: tests share two cores
WORDS = "a fine film with heart and wit but the plot drags on too long sadly".split()


def write_rt(root, n=40):
    """A small RT folder in the released format (cp1252 bytes, one sentence per line)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, shift in (("rt-polarity.pos", 0), ("rt-polarity.neg", 5)):
        lines = [
            " ".join(WORDS[(i + shift + j) % len(WORDS)] for j in range(6)) + " \u2026 caf\xe9"
            for i in range(n)
        ]
        (root / name).write_bytes("\n".join(lines).encode("cp1252") + b"\n")
    return root


def snapshot(root):
    """Every file under root with its bytes and modification time."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """An RT run that stopped at step 4 (checkpoints, curves, a failed summary): resumable."""
    tmp = tmp_path_factory.mktemp("interrupted")
    data = tmp / "data"
    write_rt(data / "rt")
    mp = pytest.MonkeyPatch()
    mp.setenv("NORMLAB_FAULT", "raise:step:5")
    summary, run_dir = run_job(
        RT, tmp, data_dir=data, run_dir=tmp / "runs/smoke/default/rt/layernorm/seed1"
    )
    mp.undo()
    assert summary["status"] == "failed" and (run_dir / "checkpoints" / "last.pt").exists()
    return tmp


@pytest.fixture
def existing(interrupted, tmp_path):
    """A private copy of the interrupted run and its (good) data, plus its snapshot."""
    shutil.copytree(interrupted, tmp_path, dirs_exist_ok=True)
    run_dir = tmp_path / "runs/smoke/default/rt/layernorm/seed1"
    return tmp_path, run_dir, snapshot(run_dir)


def expect(error, match, overrides, tmp, run_dir, before, data_dir=None):
    with pytest.raises(error, match=match) as e:
        run_job(overrides, tmp, data_dir=data_dir or tmp / "data", run_dir=run_dir)
    assert snapshot(run_dir) == before, "the existing run directory was modified"
    return str(e.value)


# --- config: unknown names, keys and invalid hyperparameters -------------------------------------


@pytest.mark.parametrize(
    "override,match",
    [
        ("task.name=nope", r"unknown task 'nope'; valid tasks: .*imdb.*rt.*sst2"),
        ("norm.name=nope", r"unknown norm 'nope'; valid names: none, layernorm"),
        (
            "+norm.options.C=2",
            r"norm 'layernorm' has no option\(s\) \['C'\]; valid options: \['eps', 'numerics'",
        ),
        (
            "task.model.heads=3",
            r"task.model.d_model=16: must be positive and divisible by task.model.heads=3; "
            r"choose heads in \[1, 2, 4, 8, 16\].*d_model set in normlab/configs/preset/rt/smoke.yaml:\d+; "
            r"task.model.heads set on the command line: task.model.heads=3",
        ),
        (
            "task.train.lr=-0.001",
            r"task.train.lr=-0.001: the learning rate must be positive.*command line",
        ),
        ("task.train.lr=inf", r"task.train.lr=inf: must be a finite number.*command line"),
        ("task.train.clip_norm=inf", r"task.train.clip_norm=inf: must be a finite number"),
        (
            "+task.train.lrr=0.1",
            r"unknown key\(s\) \['task.train.lrr'\].*did you mean task.train.lr\?",
        ),
        ("task.data.batch_size=0", r"task.data.batch_size=0: a batch needs a positive size"),
        ("seed=-1", r"seed=-1: must be an integer from 0 to 4294967295"),
        ("+logger.tensorboard=yes", r"logger.tensorboard='yes': must be true or false"),
        ("precision=fp8", r"precision='fp8': must be one of \['fp32', 'tf32', 'bf16', 'fp16'\]"),
        ("compile=maybe", r"compile='maybe': must be true or false"),
        ("deterministic=sometimes", r"deterministic='sometimes': must be true, false or auto"),
        (
            "task.train.update_freq=0",
            r"task.train.update_freq=0: must be >= 1 micro-batches.*command line",
        ),
        (
            "task.model.placement=sandwich",
            r"model.placement='sandwich': must be one of \['post', 'pre', 'peri', 'mixln', "
            r"'deepnorm', 'reorder', 'hybrid'\]",
        ),
        (
            ("task.model.placement=post", "task.model.layernorm_scaling=true"),
            r"task.model.layernorm_scaling=True: scales the pre-norm output, so it needs the pre "
            r"placement, not post \(.*task.model.placement set on the command line",
        ),
        (
            ("task.model.placement=pre", "task.model.hybrid_first_pre=true"),
            r"task.model.hybrid_first_pre=True: makes HybridNorm's first layer pre-norm, so it "
            r"needs the hybrid placement, not pre",
        ),
        (
            ("task.model.placement=mixln", "task.model.mixln_post_layers=3"),
            r"model.mixln_post_layers=3: must be between 0 and the layers \(1\)",
        ),
    ],
)
def test_bad_config_is_refused_before_anything_is_written(existing, override, match):
    tmp, run_dir, before = existing
    overrides = [override] if isinstance(override, str) else list(override)
    expect(ConfigError, match, [*RT, *overrides], tmp, run_dir, before)


TASK_FILE = """name: rt
data: {max_len: 32, batch_size: 8, min_freq: 1, max_vocab: 0}
model: {d_model: 16, heads: 2, ffn_dim: 32, layers: 1}
train:
  max_steps: 2
  lr: -1.0e-3
"""


def test_bad_value_in_a_task_file_names_file_and_line(tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    import normlab.config as config
    import normlab.hints as hints

    root = tmp_path / "normlab" / "configs"
    shutil.copytree(config.CONFIGS, root)
    (root / "task" / "rt.yaml").write_text(TASK_FILE)
    monkeypatch.setattr(hints, "CONFIGS", root)
    with initialize_config_dir(config_dir=str(root), version_base="1.3"):
        cfg = compose(
            "train",
            overrides=[
                "task=rt",
                "scale=mini",
                *(f"paths.{k}={tmp_path}" for k in ("root", "data_dir", "cache_dir")),
            ],
        )
    with pytest.raises(
        ConfigError,
        match=r"task.train.lr=-0.001: the learning rate must be positive, e.g. 5e-4 "
        r"\(task.train.lr set in normlab/configs/task/rt.yaml:6\)",
    ):
        config.load_job(cfg, [])


@pytest.mark.parametrize(
    "override,match",
    [
        ("task.train.lrr=0.1", "Could not override 'task.train.lrr'"),
        ("task.train.max_steps=many", "merging override task.train.max_steps"),
        ("task.data.reader={split_sed:7}", "override 'task.data.reader'"),
    ],
)
def test_unknown_key_or_wrong_type_fails_at_compose(existing, override, match):
    from hydra.errors import ConfigCompositionException

    tmp, run_dir, before = existing
    expect(ConfigCompositionException, match, [*RT, override], tmp, run_dir, before)


def test_typo_in_a_command_line_key_lists_the_valid_keys():
    hints = explain_unknown_keys(
        [
            "task=rt",
            "norm=adanorm",
            "task.train.lrr=1",
            "norm.options.CC=2",
            "norm.options.eps=1e-6",
            "seed=3",
        ]
    )
    assert len(hints) == 3
    assert (
        "valid keys under task.train: adam_eps, betas," in hints[0] and "task.train.lr?" in hints[0]
    )
    # the norm's own options, including those its config file leaves out (eps)
    assert "valid keys under norm.options: C, eps," in hints[1] and ", k," in hints[1]
    assert hints[1].endswith("did you mean norm.options.C?")
    assert (
        "norm.options.eps is valid but not in the config file; add it with +norm.options.eps=..."
        in hints[2]
    )


def test_cli_exit_codes_and_messages(existing):
    tmp, run_dir, before = existing
    # a config that does not exist: one line with the options and the closest, exit 2
    for bad, says in [
        ("task=nope", "normlab: error: task=nope: no such task config; available: enwik8,"),
        ("task=sst-2", "did you mean task=sst2?"),
        ("norm=rmsnrom", "did you mean norm=rmsnorm?"),
        ("scale=smol", "did you mean scale=smoke?"),
    ]:
        out = run_cli([*RT, bad], tmp, data_dir=tmp / "data", check=False)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and says in out.stderr, (
            out.stderr
        )
    # a key no config has: normlab's line first and alone, not Hydra's advice to add it with '+';
    # bad input, as a wrong choice is, with the closest key even when it is much shorter
    for key, closest in (
        ("task.train.lrr=1", "task.train.lr"),
        ("task.train.lr_max=1", "task.train.lr"),
    ):
        out = run_cli([*RT, key], tmp, data_dir=tmp / "data", check=False)
        name = key.split("=")[0]
        assert out.returncode == 2 and out.stderr.startswith(
            f"normlab: error: {name} is not a config key"
        ), out.stderr
        assert out.stderr.count("\n") == 1 and f"did you mean {closest}?" in out.stderr
        assert f"+{name}" not in out.stderr
    out = run_cli(RT, tmp, data_dir=tmp / "nowhere", check=False)
    assert (
        out.returncode == 2
        and f"data folder {tmp / 'nowhere' / 'rt'} for task rt does not exist" in out.stderr
    )
    assert snapshot(run_dir) == before


# --- data: missing, empty, wrong encoding ---------------------------------------------------------


def test_missing_data_folder_names_the_variable_and_the_preparation_command(existing):
    tmp, run_dir, before = existing
    msg = expect(DataError, "does not exist", RT, tmp, run_dir, before, data_dir=tmp / "nowhere")
    assert "NORMLAB_DATA (or paths.data_dir)" in msg and "rt-polaritydata.tar.gz | tar -xz" in msg


@pytest.mark.parametrize(
    "name,content,match",
    [
        ("rt-polarity.neg", None, r"missing data file .*rt-polarity.neg\. To prepare it: mkdir -p"),
        ("rt-polarity.neg", b"", r"rt-polarity.neg is empty\. To prepare it"),
        ("rt-polarity.neg", b" \n\n", r"rt-polarity.neg is empty"),
        (
            "rt-polarity.pos",
            "good film\nbad film\n".encode("utf-16"),
            r"rt-polarity.pos: looks like UTF-16",
        ),
        ("rt-polarity.pos", "good film\nbad film\n".encode("utf-16-le"), r"looks like UTF-16"),
        (
            "rt-polarity.neg",
            b"fine\nalso fine\nbroken \x81 byte\n",
            r"rt-polarity.neg:3: byte 0x81 .* not valid cp1252",
        ),
    ],
)
def test_bad_rt_file(existing, name, content, match):
    tmp, run_dir, before = existing
    path = tmp / "data" / "rt" / name
    path.unlink() if content is None else path.write_bytes(content)
    expect(DataError, match, RT, tmp, run_dir, before)


def test_rt_reads_the_utf8_reencoding_as_the_same_text(tmp_path):
    from normlab.data.classification import read_rt

    orig = write_rt(tmp_path / "cp1252")
    utf8 = tmp_path / "utf8"
    utf8.mkdir()
    for p in orig.iterdir():
        (utf8 / p.name).write_text(p.read_bytes().decode("cp1252"), encoding="utf-8")
    a, b = read_rt(orig)[0], read_rt(utf8)[0]
    assert (
        a == b and "\u2026 caf\u00e9" in a["train"][0][0]
    )  # 0x85 is an ellipsis, not a line break


# --- SST-2 TSV and the IMDB tarball ---------------------------------------------------------------


def write_sst2(
    root, train: str, dev: str = "sentence\tlabel\nnice \t1\nbad \t0\n", encoding="utf-8"
):
    root.mkdir(parents=True, exist_ok=True)
    (root / "train.tsv").write_bytes(train.encode(encoding))
    (root / "dev.tsv").write_bytes(dev.encode(encoding))


@pytest.mark.parametrize(
    "train,encoding,match",
    [
        (
            "",
            "utf-8",
            r"train.tsv is empty; expected a GLUE SST-2 TSV with header 'sentence<TAB>label'",
        ),
        ("sentence\tlabel\n", "utf-8", r"train.tsv has a header but no rows"),
        (
            "sentence\tscore\ngood \t1\n",
            "utf-8",
            r"train.tsv:1: header \['sentence', 'score'\] has no 'sentence' and "
            r"'label' columns; use the labeled GLUE",
        ),
        (
            "index\tsentence\n0\tgood\n",
            "utf-8",
            r"train.tsv:1: header .*\(test.tsv has no labels\)",
        ),
        (
            "sentence\tlabel\ngood \t1\nbad \t0\nmeh \t2\n",
            "utf-8",
            r"train.tsv:4: label '2' is not 0 or 1 .*fix or delete",
        ),
        (
            "sentence\tlabel\ngood \t1\nbad \tpositive\n",
            "utf-8",
            r"train.tsv:3: label 'positive' is not 0 or 1",
        ),
        (
            "sentence\tlabel\ngood \t1\na\ttab \t0\n",
            "utf-8",
            r"train.tsv:3: expected 2 tab-separated columns",
        ),
        (
            "sentence\tlabel\ngood \t1\nbad \t0\ncaf\u00e9 \t1\n",
            "latin-1",
            r"train.tsv:4: byte 0xe9 .* not valid utf-8",
        ),
    ],
)
def test_bad_sst2_tsv(tmp_path, train, encoding, match):
    write_sst2(tmp_path / "data" / "sst2", train, encoding=encoding)
    with pytest.raises(DataError, match=match):
        run_job(["task=sst2", "scale=smoke"], tmp_path, data_dir=tmp_path / "data")


def imdb_tarball(n=300) -> bytes:
    """An aclImdb_v1.tar.gz in the released layout (random-ish text so gzip cannot shrink it away)."""
    import random

    rng = random.Random(0)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for split in ("train", "test"):
            for label in ("pos", "neg"):
                for i in range(n):
                    data = " ".join(
                        rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(60)
                    ).encode()
                    info = tarfile.TarInfo(
                        f"aclImdb/{split}/{label}/{i}_{7 if label == 'pos' else 2}.txt"
                    )
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("damage", ["truncate", "corrupt"])
def test_truncated_or_corrupt_imdb_tarball(tmp_path, damage):
    raw = imdb_tarball()
    if damage == "truncate":  # a download that stopped half-way
        raw = raw[: len(raw) // 2]
    else:  # flipped bytes in the middle of the deflate stream
        mid = len(raw) // 2
        raw = raw[:mid] + bytes(b ^ 0xFF for b in raw[mid : mid + 64]) + raw[mid + 64 :]
    root = tmp_path / "data" / "imdb"
    root.mkdir(parents=True)
    (root / "aclImdb_v1.tar.gz").write_bytes(raw)
    with pytest.raises(
        DataError,
        match=r"aclImdb_v1.tar.gz is truncated or corrupt .*delete it and download "
        r"it again\. To prepare it: .*aclImdb_v1.tar.gz",
    ):
        run_job(["task=imdb", "scale=smoke"], tmp_path, data_dir=tmp_path / "data")


def test_imdb_folder_without_reviews(tmp_path):
    (tmp_path / "data" / "imdb").mkdir(parents=True)
    with pytest.raises(
        DataError, match=r"no aclImdb/ folder or aclImdb.tar.gz in .*imdb\. To prepare it: mkdir"
    ):
        run_job(["task=imdb", "scale=smoke"], tmp_path, data_dir=tmp_path / "data")


# --- the command line: every bad input is one line, a documented exit code, nothing left behind ---

CLI_CASES = [
    ("device=cuda", 2, "device=cuda: "),
    ("device=gpu", 2, "device='gpu': not a device name"),
    ("device=cuda:7", 2, "device=cuda:7"),
    ("threads=-1", 2, "threads=-1: must be an integer"),
    ("threads=1.5", 2, "threads=1.5"),
    ("paths.root=/proc/normlab", 2, "paths.root=/proc/normlab"),
    ("paths.cache_dir=/proc/normlab", 2, "paths.cache_dir=/proc/normlab: cannot create it"),
    (
        "norm=adanorm norm.options.C=-1",
        2,
        "norm.options.C=-1 is out of range: it must be a number > 0",
    ),
    ("norm=adanorm norm.options.k=-0.1", 2, "norm.options.k=-0.1 is out of range"),
    ("norm=dyt norm.options.alpha_init=0", 2, "norm.options.alpha_init=0 is out of range"),
    ("norm=layernorm norm.options.eps=0", 2, "norm.options.eps=0 is out of range"),
    (
        "norm=batchnorm +norm.options.momentum=1.5",
        2,
        "norm.options.momentum=1.5 is out of range: it must be a number in [0, 1]",
    ),
    ("+task.train.foo=1", 2, "task.train.foo"),
    ("resume=maybe", 2, "resume='maybe': must be auto"),
    ("precision=fp8", 2, "precision='fp8': must be one of"),
    ("norm.options.numerics=foo", 2, "norm.options.numerics='foo' must be one of"),
    # the value named is the one that took effect: the last of two overrides of a key
    ("task.train.max_steps=-5", 2, "set on the command line: task.train.max_steps=-5"),
    ("name=a/b", 2, "name='a/b': the experiment name is one folder of the run root"),
    # values that cannot be one folder of the run path reached mkdir inside Hydra (exit 1)
    ("name=" + "a" * 300, 2, "(302 characters): the experiment name is one folder"),
    ("seed=" + "9" * 300, 2, "seed=99999999999999999999...(300 characters): larger than a 64-bit"),
    ("seed=4294967296", 2, "seed=4294967296: must be an integer from 0 to 4294967295"),
    ("task.data.reader.n_train=" + "9" * 400, 2, "task.data.reader.n_train=9999"),
    # no defaults to name the run folder by: Hydra's 169-line dump
    ("norm.name=bogus", 2, "norm=bogus: unknown norm 'bogus'"),
    # the synthetic task's reader options passed to RT's reader: a TypeError traceback
    ("task.name=rt", 2, "task.data.reader.length: not an option of task rt's reader"),
    ("task.model.d_model=1000000000000", 2, "the model does not fit in memory"),
]


# Each case through normlab.train's entry point in this process (the same main(), SystemExit and
# stderr as the command); a few of them also as a real process, below.
@pytest.mark.parametrize("args,code,match", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_every_bad_input_is_one_line_with_its_exit_code_and_leaves_nothing(
    tmp_path, args, code, match, monkeypatch, capfd
):
    import torch

    if args.startswith("device=cuda") and torch.cuda.is_available() and args != "device=cuda:7":
        pytest.skip("this machine has CUDA")
    rc, err = train_in_process(tmp_path, args.split(), monkeypatch, capfd)
    assert_one_line(rc, err, code, match, tmp_path)


def train_in_process(tmp_path, args: list[str], monkeypatch, capfd) -> tuple[int, str]:
    """normlab-train's main() on BASE_ARGS + ``args`` under tmp_path/runs: (exit code, stderr)."""
    import sys

    import torch

    from normlab import train

    argv = ["progress=false", f"paths.root={tmp_path / 'runs'}", *BASE_ARGS, *args]
    monkeypatch.setattr(sys, "argv", ["normlab-train", *argv])
    threads = torch.get_num_threads()
    try:
        with pytest.raises(SystemExit) as e:
            train.main()
    finally:
        torch.set_num_threads(threads)  # the job's threads=1 must not slow the tests after it
    return e.value.code, capfd.readouterr().err


BASE_ARGS = ["task=synthetic_cls", "scale=smoke", "threads=1", "task.train.max_steps=2"]


def assert_one_line(rc: int, err: str, code: int, match: str, tmp_path) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert rc == code, err[-2000:]
    assert 1 <= len(lines) <= 2 and "Traceback" not in err and match in lines[0], err
    left = [p for p in (tmp_path / "runs").rglob("*")] if (tmp_path / "runs").exists() else []
    assert left == [], left


@pytest.mark.parametrize(
    "args,code,match",
    [
        c
        for c in CLI_CASES
        if c[0] in ("device=gpu", "paths.root=/proc/normlab", "+task.train.foo=1")
    ],
)
def test_bad_input_as_a_process_is_one_line_on_stderr_and_its_exit_code(
    tmp_path, args, code, match
):
    out = run_cli([*BASE_ARGS, *args.split()], tmp_path, check=False, timeout=300)
    assert_one_line(out.returncode, out.stderr, code, match, tmp_path)


def test_report_to_a_folder_it_cannot_make_is_one_line(tmp_path):
    import subprocess
    import sys

    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "summary.json").write_text(
        '{"status": "completed", "task": "rt", "norm": "layernorm"}'
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "normlab.make_report",
            str(tmp_path),
            "--out",
            "/proc/normlab-report",
            "--no-figures",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        out.returncode == 2
        and out.stderr.count("\n") == 1
        and "--out /proc/normlab-report" in out.stderr
    )


def test_a_name_that_would_leave_the_run_root_is_refused_and_leaves_nothing(
    tmp_path, monkeypatch, capfd
):
    rc, err = train_in_process(tmp_path, ["name=../../escaped"], monkeypatch, capfd)
    assert rc == 2 and "name='../../escaped'" in err, err
    # the folders Hydra made for it, outside the run root, are gone too
    assert not (tmp_path / "escaped").exists()


def test_yaml_aliases_in_a_run_directory_are_refused_before_they_expand(tmp_path, capsys):
    # nine levels of nine aliases: 387 million strings once loaded; refused from the parse events
    from normlab.files import read_yaml, write_yaml
    from normlab.make_report import main as report_main

    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    bomb = tmp_path / "runs" / "rt" / "layernorm" / "seed2"
    bomb.mkdir(parents=True)
    (bomb / "config.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"config.yaml:1: YAML anchors and aliases are refused"):
        read_yaml(bomb / "config.yaml")
    # normlab's own writer never makes one, even for an object it meets twice
    shared = [1, 2]
    write_yaml(tmp_path / "c.yaml", {"a": shared, "b": shared})
    assert read_yaml(tmp_path / "c.yaml") == {"a": [1, 2], "b": [1, 2]}
    # the report names the run and skips it instead of exhausting memory
    from test_report import make_run

    good = make_run(tmp_path / "runs", "rt", "layernorm", 3, 75.0)
    assert (
        report_main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-figures"]) == 0
    )
    err = capsys.readouterr().err
    assert "seed2" in err and "anchors and aliases are refused" in err and good.exists()
    # evaluating that run directory: one line, exit 2
    from normlab.evaluate import main as eval_main

    assert eval_main([str(bomb)]) == 2
    assert "config.yaml:1: YAML anchors and aliases are refused" in capsys.readouterr().err


def test_a_search_whose_config_cannot_be_composed_says_so_in_normlab_lines(tmp_path):
    import subprocess
    import sys

    base = [sys.executable, "-m", "normlab.tune", "--trials", "1", "--", "task=rt", "scale=smoke"]
    base.append(f"paths.root={tmp_path / 'runs'}")
    for bad, match, code in [
        ("norm=rmsnrom", "norm=rmsnrom: no such norm config; available: adanorm,", 2),
        ("task.train.lrr=1e-3", "task.train.lrr is not a config key", 2),
    ]:
        out = subprocess.run([*base, bad], capture_output=True, text=True, timeout=300)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == code and len(lines) <= 2 and match in lines[0], out.stderr
        assert "Traceback" not in out.stderr and "+task.train" not in out.stderr
    assert (
        "did you mean norm=rmsnorm?"
        in subprocess.run(
            [*base, "norm=rmsnrom"], capture_output=True, text=True, timeout=300
        ).stderr
    )
    assert not (tmp_path / "runs").exists()
