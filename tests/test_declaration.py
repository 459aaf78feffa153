"""A confirmatory study's declaration: one file, checked before anything is written, frozen by its
hash: a run records it, and a changed file is refused once the study has runs."""

import pytest
import yaml

from normlab.study.declaration import DeclarationError, check_unchanged, load

GOOD = """\
# the study's declaration
study: confirm
claims: [ln_simple_no_worse]
alpha: 0.05
margins: {acc: 0.2}
looks: [2, 3]
futility: 0.1
seeds: [101, 102, 103]
tasks: [rt]
norms: [layernorm, layernorm_simple]
lrs: {rt: {layernorm: 0.002, layernorm_simple: 0.004}}
"""
KNOWN = dict(tasks={"rt", "sst2"}, norms={"layernorm", "layernorm_simple"},
             claims={"ln_simple_no_worse"})  # fmt: skip


def write(tmp_path, text, name="d.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_declaration_is_read_and_its_hash_is_of_what_it_declares(tmp_path):
    d = load(write(tmp_path, GOOD), **KNOWN)
    assert d["seeds"] == [101, 102, 103] and d.lr("rt", "layernorm_simple") == 0.004
    # a comment or a re-indent declares nothing new; a margin does
    same = load(
        write(tmp_path, "# reworded\n" + GOOD.replace("{acc: 0.2}", "{acc:  0.2}"), "e.yaml")
    )
    assert same.hash == d.hash
    moved = load(write(tmp_path, GOOD.replace("{acc: 0.2}", "{acc: 0.3}"), "f.yaml"))
    assert moved.hash != d.hash


@pytest.mark.parametrize(
    "old, new, says",
    [
        ("{acc: 0.2}", "{acc: 0}", "margins.acc: 0 is not a number in (0, inf)"),
        ("{acc: 0.2}", "{acc: -0.1}", "margins.acc: -0.1"),
        (
            "norms: [layernorm, layernorm_simple]",
            "norms: [layernorm, lnorm]",
            "norms: 'lnorm' is not known",
        ),
        ("tasks: [rt]", "tasks: [rtt]", "tasks: 'rtt' is not known"),
        ("looks: [2, 3]", "looks: [3, 2]", "looks: [3, 2] must increase"),
        ("layernorm_simple: 0.004", "layernorm_simpl: 0.004", "lrs.rt.layernorm_simple: missing"),
        ("seeds: [101, 102, 103]", "seeds: [101, 102]", "seeds: 2 distinct seeds declared"),
        ("claims: [ln_simple_no_worse]", "claims: [ln_worse]", "claims: 'ln_worse' is not known"),
        ("futility: 0.1", "futility: 1.5", "futility: 1.5"),
        ("study: confirm", "study: confirm\nsedes: [1]", "unknown key 'sedes'"),
    ],
)
def test_bad_input_gets_one_line_naming_the_file_and_the_key(tmp_path, old, new, says):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(DeclarationError) as e:
        load(path, **KNOWN)
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and str(path) in msg and says in msg, msg


def test_a_declaration_changed_after_the_first_run_is_refused(tmp_path):
    d = load(write(tmp_path, GOOD), **KNOWN)
    runs = []
    for i, h in enumerate((d.hash, d.hash)):
        r = tmp_path / "runs" / f"seed{101 + i}"
        r.mkdir(parents=True)
        (r / "config.yaml").write_text(yaml.safe_dump({"seed": 101 + i, "declaration": h}))
        runs.append(r)
    check_unchanged(d, runs)  # its own runs: nothing to refuse
    moved = load(write(tmp_path, GOOD.replace("{acc: 0.2}", "{acc: 0.3}"), "d2.yaml"), **KNOWN)
    with pytest.raises(DeclarationError, match="changed after the study's first run"):
        check_unchanged(moved, runs)
    # a run that records no declaration (trained before the study declared one) is refused too
    (runs[0] / "config.yaml").write_text(yaml.safe_dump({"seed": 101}))
    with pytest.raises(DeclarationError, match="record declaration none"):
        check_unchanged(d, runs)


@pytest.mark.slow
def test_the_driver_trains_what_a_declaration_says_and_refuses_it_once_changed(tmp_path, data_dir):
    import json
    import os
    import subprocess
    import sys

    from helpers import TEST_CACHE

    text = (
        "study: confirm\nclaims: [ln_simple_no_worse]\nmargins: {acc: 0.5}\nlooks: [2]\n"
        "seeds: [101, 102]\ntasks: [synthetic_cls]\nnorms: [layernorm, layernorm_simple]\n"
        "lrs: {synthetic_cls: {layernorm: 0.002, layernorm_simple: 0.004}}\n"
    )
    decl = write(tmp_path, text)
    env = {**os.environ, "NORMLAB_DATA": str(data_dir), "NORMLAB_CACHE": str(TEST_CACHE)}

    def driver(*extra):
        argv = [sys.executable, "-m", "normlab.campaigns.xu2019", "--declaration", str(decl)]
        argv += ["--scale", "smoke", "--jobs", "2", "--root", str(tmp_path / "runs")]
        argv += ["--working-tree", "--no-figures", *extra]
        return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)

    out = driver()
    assert out.returncode == 0 and "study complete" in out.stdout, out.stdout[-2000:] + out.stderr
    res = tmp_path / "results" / "smoke-confirm"
    summaries = sorted((res / "runs").rglob("summary.json"))
    assert len(summaries) == 4
    h = load(decl).hash
    for s in summaries:
        rec = json.loads(s.read_text())
        assert rec["declaration"] == h and rec["seed"] in (101, 102)
        lr = {"layernorm": "lr=0.002", "layernorm_simple": "lr=0.004"}[rec["norm"]]
        assert s.parent.parent.name == lr  # each norm at its declared lr
    before = {p: p.read_bytes() for p in res.rglob("*") if p.is_file()}
    # the margin moved after the runs: refused in one line, nothing written
    decl.write_text(text.replace("{acc: 0.5}", "{acc: 0.2}"))
    refused = driver()
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "changed after the study's first run" in refused.stderr and str(decl) in refused.stderr
    assert {p: p.read_bytes() for p in res.rglob("*") if p.is_file()} == before
    # a bad file: one line naming the file and the key, exit 2, no folder
    decl.write_text(text.replace("{acc: 0.5}", "{acc: 0}").replace("confirm", "other"))
    bad = driver()
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "margins.acc" in bad.stderr and str(decl) in bad.stderr
    assert not (tmp_path / "results" / "smoke-other").exists()
    # a pilot whose SDs cannot resolve the row within the last look: --plan names it, and a
    # declaration that does not list it as exploratory does not start
    pilot = tmp_path / "pilot"
    pilot.mkdir()
    row = {"claim": "ln_simple_no_worse", "column": "synthetic_cls", "sd": 9.0, "n": 5}
    (pilot / "findings.json").write_text(json.dumps({"findings": [{**row, "unit": "acc"}]}))
    decl.write_text(text.replace("confirm", "planned") + f"pilot: {pilot}\n")
    planned = driver("--plan")
    assert planned.returncode == 0, planned.stderr
    assert "exploratory (cannot resolve within 2 seeds): ['ln_simple_no_worse@synthetic_cls']" in (
        planned.stdout
    )
    unlisted = driver()
    assert unlisted.returncode == 2 and "is not the power plan's" in unlisted.stderr
    assert len(unlisted.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "results" / "smoke-planned").exists()


def test_the_power_plan_reads_the_pilots_sds_and_names_the_rows_it_cannot_resolve(tmp_path):
    """A row whose pilot SD lets a margin-sized effect resolve within the last look is planned;
    one whose SD is ten times the margin is exploratory, and a declaration that does not list it
    so before its first run is refused."""
    import json

    from normlab.campaigns.xu2019.power_plan import exploratory, lines, plan, unplanned

    pilot = tmp_path / "pilot"
    pilot.mkdir()
    rows = [
        {"claim": "ln_simple_no_worse", "column": "rt", "sd": 0.05, "n": 5, "unit": "acc"},
        {"claim": "ln_simple_no_worse", "column": "sst2", "sd": 2.0, "n": 5, "unit": "acc"},
    ]
    (pilot / "findings.json").write_text(json.dumps({"findings": rows}))
    text = GOOD.replace("tasks: [rt]", "tasks: [rt, sst2]").replace(
        "lrs: {rt: {layernorm: 0.002, layernorm_simple: 0.004}}",
        "lrs: {rt: {layernorm: 0.002, layernorm_simple: 0.004}, "
        "sst2: {layernorm: 0.002, layernorm_simple: 0.004}}",
    )
    text = text.replace("looks: [2, 3]", "looks: [3, 5]").replace(
        "seeds: [101, 102, 103]", "seeds: [101, 102, 103, 104, 105]"
    )
    d = load(write(tmp_path, text + f"pilot: {pilot}\n"), **KNOWN)
    got, level = plan(d)
    assert level == pytest.approx(0.05 / (4 * 2))  # 2 rows x 2 hypotheses, 2 looks
    assert [(r.task, r.seeds) for r in got] == [("rt", 5), ("sst2", None)]
    assert exploratory(got) == ["ln_simple_no_worse@sst2"]
    assert "ln_simple_no_worse@rt: SD 0.05 over 5 pilot seeds" in "\n".join(lines(d))
    assert "is not the power plan's" in unplanned(d)
    listed = load(write(tmp_path, text + f"pilot: {pilot}\nexploratory: [ln_simple_no_worse@sst2]\n", "e.yaml"), **KNOWN)  # fmt: skip
    assert unplanned(listed) == ""
    with pytest.raises(DeclarationError, match="exploratory\\[0\\]"):
        load(write(tmp_path, text + "exploratory: [ln_worse@rt]\n", "f.yaml"), **KNOWN)


def test_a_declared_studys_rows_are_tested_as_its_declaration_says(tmp_path):
    """A confirmatory study's rows are tested at its declaration's margin, alpha, futility floor
    and looks, not the campaign's file's; its family is the study's own, declared, less the rows
    it declares exploratory (tested, uncorrected, labelled so); every caption names the file."""
    from test_report import make_run

    from normlab.campaigns.xu2019.family import build, family_sentence
    from normlab.campaigns.xu2019.findings import findings
    from normlab.campaigns.xu2019.findings_text import method
    from normlab.campaigns.xu2019.protocol import of_declaration, protocol
    from normlab.report import find_runs
    from normlab.report.aggregate import Grid

    text = GOOD.replace("{acc: 0.2}", "{acc: 0.7}").replace("0.1\n", "0.25\n")
    text = text.replace("tasks: [rt]", "tasks: [rt, sst2]")
    text = text.replace("lrs: {rt: {layernorm: 0.002, layernorm_simple: 0.004}}", (
        "lrs: {rt: {layernorm: 0.002, layernorm_simple: 0.004}, "
        "sst2: {layernorm: 0.002, layernorm_simple: 0.004}}\n"
        "exploratory: [ln_simple_no_worse@sst2]"
    ))  # fmt: skip
    d = load(write(tmp_path, text), **KNOWN)
    declared = of_declaration(d)
    assert declared.margin("acc") == 0.7 != protocol().margin("acc")
    assert declared.futility == 0.25 and declared.looks == (2, 3) != protocol().looks
    assert declared.trained_margin == protocol().trained_margin and declared.study == "confirm"
    # a claim the file does not declare is outside its family, as an exploratory row is
    assert declared.is_exploratory("adanorm_improves", "rt")
    assert not declared.is_exploratory("ln_simple_no_worse", "rt")
    assert not protocol().is_exploratory("adanorm_improves", "rt")
    for task in ("rt", "sst2"):  # LayerNorm-simple 0.5 points below: inside 0.7, not inside 0.2
        for seed in (101, 102, 103):
            make_run(tmp_path / "runs", task, "layernorm", seed, 70.0 + seed % 3)
            make_run(
                tmp_path / "runs", task, "layernorm_simple", seed, 69.5 + seed % 3 + seed / 1e4
            )
    runs = find_runs([tmp_path / "runs"])
    rows = [
        f for f in findings(Grid(runs, protocol=declared)) if f.claim.key == "ln_simple_no_worse"
    ]
    rt, sst2 = sorted(rows, key=lambda f: f.column)
    assert rt.margin == sst2.margin == 0.7 and rt.p_seq is not None
    from normlab.gitinfo import git

    head = [git("rev-parse", "HEAD")]  # runs of this commit
    fam = build(rows, tmp_path / "results" / "mini-confirm", commits=head, protocol=declared)
    assert (fam.study, fam.primary, fam.declared, fam.tested_rows, fam.size) == (
        "confirm", True, True, 1, 2,
    )  # fmt: skip
    assert rt.primary and rt.p_holm is not None and rt.shown() == "non-inferior"
    assert not sst2.primary and sst2.p_holm is None and sst2.shown() == "non-inferior (exploratory)"
    text = method(fam)
    assert f"({d.path} (declaration {d.hash[:12]}), each with its reason): ±0.7 accuracy" in text
    assert "futility floor (0.25)" in text and "looks of 2, 3 seeds (K = 2)" in text
    assert family_sentence(fam).startswith(f"Primary family (declared in {d.path} (declaration")
    # the declaration lies outside the checkout here: git cannot date it, and the caption says so
    assert fam.when is None and "git cannot tell" in family_sentence(fam)
    default = [f for f in findings(Grid(runs, protocol=protocol())) if f.claim.key == rt.claim.key]
    assert {f.margin for f in default} == {0.2}


def test_a_declared_study_adds_its_declared_seeds_to_its_open_rows_at_their_own_lrs(tmp_path):
    """After the first look, the declared grid names the next look's seeds, in the declared order
    (not the next integers), at each norm's declared lr, for the norms of the family's unresolved
    rows only: a row the declaration lists as exploratory trains the first look alone."""
    import shutil

    from test_report import make_run

    from normlab.campaigns.xu2019.kinds import Fixed
    from normlab.campaigns.xu2019.request import parse

    decl = write(tmp_path, (
        "study: confirm\nclaims: [ln_simple_no_worse]\nmargins: {acc: 0.2}\nlooks: [5, 10]\n"
        "seeds: [101, 102, 103, 104, 105, 201, 202, 203, 204, 205]\ntasks: [rt, sst2, mnist]\n"
        "norms: [layernorm, layernorm_simple]\n"
        "lrs: {rt: {layernorm: 0.002, layernorm_simple: 0.004}, "
        "sst2: {layernorm: 0.002, layernorm_simple: 0.004}, "
        "mnist: {layernorm: 0.001, layernorm_simple: 0.001}}\n"
        "exploratory: [ln_simple_no_worse@sst2]\n"
    ))  # fmt: skip
    r = parse(["--declaration", str(decl), "--scale", "mini", "--jobs", "1",
               "--root", str(tmp_path / "runs"), "--out", str(tmp_path / "res")])  # fmt: skip

    def new_grid():
        return Fixed(r).grid("c", False, None)

    first = new_grid().jobs()
    assert {j.seed for j in first} == {101, 102, 103, 104, 105} and len(first) == 30
    assert {(j.task, j.norm, j.lr) for j in first if j.task == "rt"} == {
        ("rt", "layernorm", 0.002), ("rt", "layernorm_simple", 0.004),
    }  # fmt: skip
    noise = (0.3, -0.5, 0.1, 0.4, -0.2)
    for job in first:
        e = noise[job.seed - 101]
        # mnist: LayerNorm-simple clearly no worse (resolved); rt and sst2: noisy ties
        a, b = {"mnist": (98.0 + e / 100, 97.0), "rt": (75 + 2 * e, 75 - e)}.get(
            job.task, (80 + 2 * e, 80 - e)
        )
        value = a if job.norm == "layernorm_simple" else b
        d = make_run(tmp_path / "made", job.task, job.norm, job.seed, value, lr=job.lr)
        s = d / "summary.json"
        s.write_text(s.read_text().replace('"completed"', '"completed", "git_commit": "c"'))
        dest = tmp_path / "res" / "runs" / job.rel()
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(d, dest)
    grid = new_grid()
    added = [j for j in grid.jobs() if j.seed not in range(101, 106)]
    assert {(j.task, j.norm, j.lr) for j in added} == {
        ("rt", "layernorm", 0.002), ("rt", "layernorm_simple", 0.004),
    }  # fmt: skip
    assert sorted({j.seed for j in added}) == [201, 202, 203, 204, 205]
    assert grid.roles[205] == "evaluation" and grid.plan() == added
