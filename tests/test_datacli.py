"""normlab-data: the md5 of every file the loaders read against the reference copy the committed
results used, and the commands that fetch each task's public data (the ones its errors quote)."""

import shutil

import pytest

from normlab.data import sources
from normlab.data.classification import how
from normlab.datacli import main


def test_the_reference_copy_checks_out(data_dir, capsys):
    assert main(["check", "--data", str(data_dir)]) == 0
    out = capsys.readouterr().out
    for task, files in sources.manifest().items():
        assert f"{task}: {len(files)} of {len(files)} files are the reference copy's" in out
    assert len(sources.manifest()["ptb"]) == 199  # every .dp file the parser reads


def test_a_changed_byte_a_missing_file_and_an_extra_one_are_named(data_dir, tmp_path, capsys):
    shutil.copytree(data_dir / "rt", tmp_path / "rt")
    pos = tmp_path / "rt" / "rt-polarity.pos"
    raw = bytearray(pos.read_bytes())
    raw[100] ^= 1
    pos.write_bytes(bytes(raw))
    assert main(["check", "rt", "--data", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "rt: 1 of 2 files are the reference copy's, 1 differs" in out
    assert f"differs: {pos} (md5 {sources.md5(pos)}, the reference copy's is 674ca95d" in out
    (tmp_path / "rt" / "rt-polarity.neg").unlink()
    assert main(["check", "rt", "--data", str(tmp_path)]) == 1
    assert f"missing: {tmp_path / 'rt' / 'rt-polarity.neg'}" in capsys.readouterr().out
    # the official IMDB tarball is read too, but it is not the reference copy
    (tmp_path / "imdb").mkdir()
    (tmp_path / "imdb" / "aclImdb_v1.tar.gz").write_bytes(b"x")
    assert main(["check", "imdb", "--data", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert (
        "extra: " in out
        and "aclImdb_v1.tar.gz (read by the loader, not in the reference copy)" in out
    )
    assert "missing: " in out and "aclImdb.tar.gz" in out


def test_fetch_prints_what_the_loaders_errors_quote(tmp_path, capsys):
    assert main(["fetch", "rt", "ptb", "--data", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rt = sources.commands("rt", tmp_path)[0]
    assert rt in out and rt in how("rt", tmp_path / "rt")
    assert "pip install nltk" in out  # the PTB downloader needs it, and nltk is no dependency
    assert f"python -m nltk.downloader -d {tmp_path / 'ptb'} dependency_treebank treebank" in out
    assert set(sources.FETCH) == set(sources.READS)  # every task with data says where it comes from


def test_fetch_run_runs_the_commands_then_checks(data_dir, tmp_path, monkeypatch, capsys):
    # no network here: a local copy stands in for the download, through the same path
    monkeypatch.setitem(
        sources.FETCH, "rt", [f"mkdir -p {{dir}} && cp {data_dir}/rt/rt-polarity.* {{dir}}/"]
    )
    assert main(["fetch", "rt", "--run", "--data", str(tmp_path)]) == 0
    assert "rt: 2 of 2 files are the reference copy's" in capsys.readouterr().out
    monkeypatch.setitem(sources.FETCH, "rt", ["exit 7"])
    assert main(["fetch", "rt", "--run", "--data", str(tmp_path)]) == 7
    assert "exit 7 from: exit 7" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["check", "rtt"], ["fetch", "sst-2"]])
def test_an_unknown_task_is_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown task" in err and "iwslt14_de_en" in err
