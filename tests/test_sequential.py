"""Seeds added until a row resolves: the family-wise error of the primary family holds under the
adding, by simulation of the study's shape (seconds), and the scalar path the report takes agrees
with the simulated one."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from normlab.campaigns.xu2019.findings import CLAIMS, look_sizes
from normlab.campaigns.xu2019.protocol import protocol, settings
from normlab.report import hypotheses as H
from normlab.report import stats as S
from normlab.report.sequential import holm_rows, resolve_chance, sequential_family

PROTOCOL = protocol()
ALPHA = PROTOCOL.alpha
STUDIES = 10_000


def family_shape() -> tuple[list, np.ndarray]:
    """The primary family's rows: every claim on the six tasks that learn at mini (eight tasks
    less the declared not-learning one, less one for cells that did not train): 30 rows, the
    non-inferiority claim's 6 and the overfitting claim's 6 among them, each with its measure's
    margin in seed-sd units 0.2."""
    forms = [c.form for c in CLAIMS for _ in range(6)]
    return forms, np.full(len(forms), 0.2)


def boundary_study(rng, forms, margins, n_seeds, where):
    """[S, R, N, 2] differences at the boundary of one verdict class's null hypotheses, where an
    error of that class is likeliest: ``where`` = "support" (non-inferiority rows at -margin,
    superiority rows at 0, overfitting rows with a clear train-loss effect and the valid loss at
    0), "refute" (the same boundaries, the overfitting rows' train loss at 0 too) or "negligible"
    (every row at +margin, the overfitting rows' valid loss too)."""
    R = len(forms)
    d = rng.standard_normal((STUDIES, R, n_seeds, 2))
    ni = np.array([f == S.NONINFERIOR for f in forms])
    ov = np.array([f == S.OVERFIT for f in forms])
    shift = margins if where == "negligible" else np.where(ni, -margins, 0.0)
    d[..., 0] += shift[None, :, None]  # a one-stream row's only stream; an overfitting row's valid
    d[..., 1] += np.where(ov & (where == "support"), 3.0, 0.0)[None, :, None]
    return np.where(ov[None, :, None, None], d[..., ::-1], d)  # an overfitting row: train first


def test_the_look_sizes_are_the_declared_ones():
    q = settings()["sequential"]
    assert look_sizes() == list(range(q["first"], q["max_seeds"] + 1, q["step"])) == [5, 10, 15, 20]
    assert PROTOCOL.margin("acc") > 0


@pytest.mark.parametrize("where", H.PRECEDENCE)
def test_no_verdict_class_errs_more_often_than_alpha_when_seeds_are_added(where):
    """False support, false refutation and false negligibility, each at its least favourable
    boundary, in 10,000 simulated studies of the primary family's shape with the declared looks:
    each at most alpha (within 3 Monte-Carlo SEs); the full-size run is scripts/error_rates.py."""
    rng = np.random.default_rng(20261207 + H.PRECEDENCE.index(where))
    forms, margins = family_shape()
    sizes = look_sizes()
    d = boundary_study(rng, forms, margins, sizes[-1], where)
    out = sequential_family(d, forms, margins, sizes, ALPHA)
    rate = (out.verdict == H.PRECEDENCE.index(where)).any(axis=1).mean()
    mc = 3 * np.sqrt(ALPHA * (1 - ALPHA) / STUDIES)
    assert rate <= ALPHA + mc, (where, rate)
    assert (out.used >= sizes[0]).all() and out.used.mean() > sizes[0]  # rows did gain seeds
    if where == "support":
        # the same adding with each row a family of its own (no Holm over the rows): the error
        # is well above alpha, so the test above could fail
        alone = np.zeros(out.verdict.shape, bool)
        for r in range(len(forms)):
            one = sequential_family(
                d[:, r : r + 1], forms[r : r + 1], margins[r : r + 1], sizes, ALPHA
            )
            alone[:, r] = one.verdict[:, 0] == 1
        assert alone.any(axis=1).mean() > 3 * ALPHA


def test_a_rule_that_stops_adding_seeds_can_only_remove_rejections():
    """The futility rule only withholds seeds: any rule that stops rows early (here rows whose
    claim's own t is small after the first look) rejects a subset of what adding every seed does."""
    from normlab.report.sequential import Layout, _looks

    rng = np.random.default_rng(5)
    forms, margins = family_shape()
    sizes = look_sizes()
    d = boundary_study(rng, forms, margins, sizes[-1], "support")[:2000]
    d[:, ::3] += 0.5  # some real effects, so that rejections happen
    layout = Layout(forms)
    S_, R = d.shape[:2]
    first = d[:, :, : sizes[0], 0]
    weak = np.abs(first.mean(2) / (first.std(2, ddof=1) / np.sqrt(sizes[0]))) < 1.0

    def at(stop):
        def inner(n):
            x = d[:, :, :n]
            new = np.ones((S_, R), bool) if n == sizes[0] else ~(weak & stop)
            return x.mean(2), x.std(2, ddof=1) / np.sqrt(n), new

        return inner

    full, stopped = (
        _looks(at(flag), layout, margins, sizes, ALPHA, np.ones((S_, layout.size)), np.ones((S_, R), bool))
        for flag in (False, True)
    )  # fmt: skip
    assert not (stopped.rejected & ~full.rejected).any()
    assert stopped.rejected.sum() < full.rejected.sum()


def test_the_report_path_agrees_with_the_simulated_one():
    from normlab.report.aggregate import Cell
    from normlab.report.family import apply
    from normlab.report.verdicts import Claim, evaluate_cells

    rng = np.random.default_rng(7)
    forms = [S.NONINFERIOR] * 10 + [S.SUPERIOR] * 20
    margins = np.full(len(forms), 0.2)
    sizes = look_sizes()
    # effects from none to 2 seed sds: some rows resolve early, some late, some never
    d = rng.normal(np.linspace(0.0, 2.0, len(forms))[None, :, None], 1.0, (1, len(forms), 20))
    out = sequential_family(d, forms, margins, sizes, ALPHA)
    # each row as the report sees it after its last look, from runs of the seeds it used
    rows = []
    for r, form in enumerate(forms):
        claim = Claim(f"c{r}", "c", "a", "b", form, "metric", margin=0.2)
        seeds = range(2, 2 + int(out.used[0, r]))
        A = Cell([_run("a", s, 50.0 + d[0, r, i]) for i, s in enumerate(seeds)])
        B = Cell([_run("b", s, 50.0) for s in seeds])
        rows.append(evaluate_cells(claim, A, B, "rt", ("acc", True), PROTOCOL, looks=sizes))
    apply("fixed", rows, PROTOCOL, primary=True, declared=False, looks=sizes)
    words = {H.SUPPORT: {"non-inferior", "better"}, H.REFUTE: {"inferior", "worse"}}
    words[H.NEGLIGIBLE] = {"negligible"}
    for f, v in zip(rows, out.verdict[0]):
        assert f.verdict() in (words[H.PRECEDENCE[v]] if v < 3 else {"unresolved"})
    assert 0 < out.resolved.sum() < len(forms) and len(set(out.used[0])) > 1
    # the simulation's Holm is statsmodels' (the report's), hypothesis by hypothesis
    flat = [h["p_seq"] for f in rows for h in f.hyps]
    holm = multipletests(flat, method="holm")[1]
    assert holm_rows(np.array([flat]))[0] == pytest.approx(holm)
    assert [h["p_holm"] for f in rows for h in f.hyps] == pytest.approx(holm)


def _run(norm, seed, value):
    from pathlib import Path

    from normlab.report.runs import Run

    summary = {"status": "completed", "task": "rt", "norm": norm, "seed": seed, "scale": "mini"}
    summary.update(metric="acc", test={"acc": value})
    return Run(Path("/nonexistent"), {}, summary)


def test_the_added_seeds_stop_at_the_last_look_size_the_limit_allows():
    """--max-seeds 12 trains no 12th seed (looks are at 5, 10, ...), and the folder's README names
    the seeds the grid adds, not the limit."""
    from normlab.campaigns.xu2019.findings import added_seeds
    from normlab.campaigns.xu2019.folder_readme import added_seeds_text

    first = [2, 3, 4, 5, 6]
    assert added_seeds(first, 12) == [7, 8, 9, 10, 11]
    assert added_seeds(first, 20) == list(range(7, 22))
    assert added_seeds(first, 4) == added_seeds(first, 5) == []
    rec = {"grid": {"until_resolved": True, "max_seeds": 12, "seeds": first}}
    assert ", then 7-11 for the norms" in added_seeds_text(rec)
    assert (
        added_seeds_text({"grid": {"until_resolved": True, "max_seeds": 5, "seeds": first}}) == ""
    )


def test_the_next_look_adds_seeds_to_the_norms_of_unresolved_rows_only(tmp_path):
    """After the first look (seeds 2-6) the grid names seeds 7-11 for the norms of the primary rows
    Holm leaves unresolved, and none for a row it resolved; nothing while a look is running."""
    from test_report import make_run

    from normlab.campaigns.xu2019.sequential_grid import SequentialGrid

    def new_grid():  # a grid reads the finished runs once: a new one sees the added ones
        return SequentialGrid(
            ["rt", "mnist"], ["layernorm", "layernorm_simple"], [2, 3, 4, 5, 6],
            max_seeds=10, scale="mini", name="xu2019", root=tmp_path / "runs",
            copies=tmp_path / "copies", commit="c", dirty=False, code=None, roles={},
            committed=tmp_path / "committed",
        )  # fmt: skip

    grid = new_grid()
    base = grid.jobs()
    assert len(base) == 2 * 2 * 5 and grid.unresolved() is None  # nothing has run yet
    noise = (0.3, -0.5, 0.1, 0.4, -0.2)
    for seed, e in zip((2, 3, 4, 5, 6), noise):
        # mnist: LayerNorm-simple clearly no worse (resolved); rt: a noisy tie (unresolved)
        for task, a, b in (("mnist", 98.0 + e / 100, 97.0), ("rt", 75.0 + 2 * e, 75.0 - e)):
            for norm, v in (("layernorm_simple", a), ("layernorm", b)):
                d = make_run(tmp_path / "committed", task, norm, seed, v)
                s = d / "summary.json"
                s.write_text(s.read_text().replace('"completed"', '"completed", "git_commit": "c"'))
    grid = new_grid()
    jobs = grid.jobs()
    added = [j for j in jobs if j.seed > 6]
    assert {(j.task, j.norm) for j in added} == {("rt", "layernorm"), ("rt", "layernorm_simple")}
    assert sorted({j.seed for j in added}) == [7, 8, 9, 10, 11]
    assert grid.roles[11] == "evaluation" and grid.plan() == added


def test_the_chance_to_resolve_agrees_with_adding_seeds_to_the_observed_ones():
    """resolve_chance works from each row's mean, SD and p so far; drawing the same posterior
    predictive seeds, appending them to the observed differences and running the declared
    procedure from the first look resolves the open rows as often."""
    rng = np.random.default_rng(11)
    sizes, studies = look_sizes(), 20_000
    ni = np.array([True, False, False, False])
    margins = np.array([0.2, 0.2, 0.2, 0.2])
    # four rows' first five seeds: a clear effect (rejected at once), a weak one, a tie, a noisy tie
    obs = np.array(
        [
            [2.1, 1.8, 2.4, 2.0, 1.9],
            [0.5, -0.2, 0.9, 0.1, 0.6],
            [0.3, -0.3, 0.1, 0.25, -0.2],
            [4.5, -6.0, 1.2, -3.3, 2.7],
        ]
    )
    n = np.full(4, sizes[0])
    mean, sd = obs.mean(1), obs.std(1, ddof=1)
    forms = [S.NONINFERIOR if x else S.SUPERIOR for x in ni]
    p_seq = [
        min(1.0, len(sizes) * float(h.p))
        for r in range(4)
        for h in H.row(forms[r], 0.2, [H.stream_stats(obs[r])])
    ]
    resolved0 = sequential_family(obs[None], forms, margins, sizes[:1], ALPHA).resolved
    open_ = ~resolved0[0]
    assert list(open_) == [False, True, True, True]
    chance = resolve_chance(
        n, mean, sd, p_seq, open_, forms, margins, sizes, ALPHA, studies, seed=3
    )
    assert np.isnan(chance[0])
    # the same predictive draws, by hand, appended to the observed seeds
    dof = n - 1
    sigma2 = dof * sd**2 / rng.chisquare(dof, (studies, 4))
    mu = mean + np.sqrt(sigma2 / n) * rng.standard_normal((studies, 4))
    extra = mu[..., None] + np.sqrt(sigma2)[..., None] * rng.standard_normal((studies, 4, 15))
    d = np.concatenate([np.broadcast_to(obs, (studies, 4, 5)), extra], -1)
    by_hand = sequential_family(d, forms, margins, sizes, ALPHA).resolved.mean(0)
    se = np.sqrt(by_hand * (1 - by_hand) / studies)
    assert np.all(np.abs(chance[1:] - by_hand[1:]) < 4 * se[1:] + 0.005), (chance, by_hand)
    # the weak effect mostly resolves; the tie less often (negligible needs its TOST through
    # Holm, no raw CI), the noisy tie rarely
    assert chance[1] > 0.5 and chance[2] > 0.1 and chance[3] < 0.1


def test_a_row_the_futility_rule_stops_gains_no_seeds_and_stays_stopped(tmp_path, monkeypatch):
    """After the first look, a noisy tie whose chance to resolve by 20 seeds is below the declared
    floor gains no seeds, and the driver's line names it; at the next look it gains none even when
    its chance would be above the floor, since it lacks the seeds of the look before."""
    import dataclasses

    from test_report import make_run

    from normlab.campaigns.xu2019 import sequential_grid as G
    from normlab.report import family as RF

    # a floor that stops a tie in this small family (in the primary family's 33 rows a tie's chance
    # is lower: Holm over more rows asks more of each)
    floor = dataclasses.replace(PROTOCOL, futility=0.15)

    def new_grid():
        return G.SequentialGrid(
            ["rt", "sst2"], ["layernorm", "layernorm_simple", "adanorm"], [2, 3, 4, 5, 6],
            max_seeds=15, protocol=floor, scale="mini", name="xu2019", root=tmp_path / "runs",
            copies=tmp_path / "copies", commit="c", dirty=False, code=None, roles={},
            committed=tmp_path / "committed",
        )  # fmt: skip

    def add(task, seed, values):
        for norm, v in values.items():
            d = make_run(tmp_path / "committed", task, norm, seed, v)
            s = d / "summary.json"
            s.write_text(s.read_text().replace('"completed"', '"completed", "git_commit": "c"'))

    # rt: LayerNorm-simple a little ahead of LayerNorm, unresolved at 5 seeds (more seeds may show
    # it), AdaNorm clearly ahead; sst2: LayerNorm-simple clearly no worse, AdaNorm against
    # LayerNorm a tie with a spread of 6 accuracy points against a margin of 0.2 (never resolves)
    for seed, e in zip((2, 3, 4, 5, 6), (0.3, -0.5, 0.1, 0.4, -0.3)):
        add("rt", seed, {"layernorm_simple": 75.2 + e, "layernorm": 75.0, "adanorm": 78.0 + e / 9})
        add("sst2", seed, {"layernorm_simple": 81 + e / 9, "layernorm": 80, "adanorm": 80 + 10 * e})
    grid = new_grid()
    added = {(j.task, j.norm) for j in grid.jobs() if j.seed > 6}
    assert added == {("rt", "layernorm"), ("rt", "layernorm_simple")}
    stopped_rows = list(grid.stopped)
    assert {(f.claim.key, f.column) for f in stopped_rows} == {("adanorm_improves", "sst2")}
    line = grid.futility_lines()[0]
    assert "adanorm_improves on sst2" in line and "below 0.15" in line
    assert all(f.resolve_chance < 0.15 for f in grid.stopped)
    # the second look's seeds for rt; at the third, sst2's row is a look behind rt's: the report
    # marks it stopped, and the grid adds it none
    for seed, e in zip(range(7, 12), (0.2, -0.3, 0.5, 0.0, 0.1)):
        add("rt", seed, {"layernorm_simple": 75.2 + e, "layernorm": 75.0})
    grid = new_grid()
    assert {j.task for j in grid.jobs() if j.seed > 11} <= {"rt"}
    earlier = [
        f for f in grid.stopped_before if (f.claim.key, f.column) == ("adanorm_improves", "sst2")
    ]
    assert earlier and earlier[0].stopped and earlier[0].n == 5
    assert "stopped for futility at an earlier look" in grid.futility_lines()[-1]
    # were the report not to mark it (its chance above the floor, unlike the first look's, which
    # stands), the grid still adds it none: it lacks the second look's seeds
    first = next(f.resolve_chance for f in stopped_rows)
    original = RF.chances

    def unmarked(mine, sizes, alpha, floor):
        original(mine, sizes, alpha, floor)
        for f in mine:
            f.stopped = f.stopped and f.resolve_chance == first

    monkeypatch.setattr(RF, "chances", unmarked)
    grid = new_grid()
    assert {j.task for j in grid.jobs() if j.seed > 11} <= {"rt"}
    assert grid.stopped == []
    assert {(f.claim.key, f.column) for f in grid.stopped_before} == {("adanorm_improves", "sst2")}


def test_the_report_marks_rows_a_look_behind_as_stopped_and_gives_no_chance_after_the_last_look():
    """A row that missed a look's seeds was stopped by the rule, whatever its chance now; a row with
    the last look's seeds has no look left: no chance, not stopped, unresolved. A row's look is the
    seeds it ran: one whose norm diverged on some of them is neither behind nor short of a look."""
    from scipy import stats

    from normlab.report.family import apply
    from normlab.report.verdicts import Claim, Finding

    def row(key, n, diff, sd, n_run=0):
        t = diff / (sd / np.sqrt(n))
        half = float(stats.t.ppf(0.95, n - 1) * sd / np.sqrt(n))
        claim = Claim(key, key, "a", "b", S.SUPERIOR, "metric")
        st = H.Stream(np.float64(diff), np.float64(sd / np.sqrt(n)), n - 1)
        hyps = [
            {"cls": h.cls, "what": h.what, "p": float(h.p), "p_seq": min(1.0, 4 * float(h.p))}
            for h in H.row(S.SUPERIOR, 0.2, [st])
        ]
        return Finding(
            claim, "rt", "acc", n=n, diff=diff, sd=sd, t=t, p=hyps[0]["p"],
            p_seq=hyps[0]["p_seq"], ci90=(diff - half, diff + half), margin=0.2, n_run=n_run,
            hyps=hyps,
        )  # fmt: skip

    floor = PROTOCOL.futility
    rows = [row("ahead", 10, 0.4, 0.6), row("behind", 5, 0.4, 0.6)]
    apply("fixed", rows, PROTOCOL, primary=True, declared=True, looks=look_sizes())
    ahead, behind = rows
    assert ahead.verdict() == behind.verdict() == "unresolved"
    assert behind.resolve_chance > floor and ahead.resolve_chance > floor
    assert behind.stopped and not ahead.stopped
    done = [row("done", 20, 0.05, 1.0)]
    apply("fixed", done, PROTOCOL, primary=True, declared=True, looks=look_sizes())
    assert done[0].verdict() == "unresolved"
    assert done[0].resolve_chance is None and not done[0].stopped
    # five of the second look's seeds diverged for one norm: 5 pairs, but the look was made
    rows = [row("ahead", 10, 0.4, 0.6), row("diverged", 5, 0.4, 0.6, n_run=10)]
    apply("fixed", rows, PROTOCOL, primary=True, declared=True, looks=look_sizes())
    assert rows[1].resolve_chance > floor and not rows[1].stopped
    done = [row("done", 17, 0.05, 1.0, n_run=20)]
    apply("fixed", done, PROTOCOL, primary=True, declared=True, looks=look_sizes())
    assert done[0].resolve_chance is None and not done[0].stopped


def test_the_generated_results_section_names_the_added_seeds(tmp_path):
    """The README's provenance line of a folder that added seeds names them beside the first look's."""
    import json

    from normlab.campaigns.xu2019.readme import provenance

    grid = {"seeds": [2, 3, 4, 5, 6], "seed_roles": {"selection": [1]}, "until_resolved": True}
    rec = {"grid": {**grid, "max_seeds": 10}, "runs": {"completed": 485}, "git_commit": "e" * 40}
    (tmp_path / "mini").mkdir()
    (tmp_path / "mini" / "reproduce.json").write_text(json.dumps(rec))
    line = provenance(tmp_path, "mini")
    assert "reported seeds 2, 3, 4, 5, 6, then 7-11 for the norms of the primary rows" in line
    del rec["grid"]["until_resolved"]
    (tmp_path / "mini" / "reproduce.json").write_text(json.dumps(rec))
    assert "reported seeds 2, 3, 4, 5, 6, selection seed(s)" in provenance(tmp_path, "mini")


def test_a_rows_look_is_the_seeds_both_its_norms_ran_not_seeds_one_gained_for_another_row():
    """LayerNorm gained seeds 7-11 for another row of its own, AdaNorm has 2-6: the AdaNorm row made
    one look (5 seeds), a look behind a row with ten, so it is stopped; a seed one norm diverged on
    still counts as run."""
    from pathlib import Path

    from normlab.report.aggregate import Cell
    from normlab.report.family import apply
    from normlab.report.runs import Run
    from normlab.report.verdicts import Claim, evaluate_cells

    def run(norm, seed, status="completed", task="rt"):
        value = 70.0 + seed % 3 + (1.8 * (seed % 2) - 0.1 if norm == "adanorm" else 0.0)
        summary = {"status": status, "task": task, "norm": norm, "seed": seed, "scale": "mini"}
        summary.update(metric="acc", test={"acc": value} if status == "completed" else {})
        return Run(Path("/nonexistent"), {}, summary)

    claim = Claim("ada", "AdaNorm > LayerNorm", "adanorm", "layernorm", S.SUPERIOR, "metric")
    seeds, first = range(2, 12), range(2, 7)

    def row(task, ada_seeds, diverged=()):
        ada = [run("adanorm", s, task=task) for s in ada_seeds]
        ada += [run("adanorm", s, "diverged", task) for s in diverged]
        ln = Cell([run("layernorm", s, task=task) for s in seeds])
        return evaluate_cells(
            claim, Cell(ada), ln, task, ("acc", True), PROTOCOL, looks=look_sizes()
        )

    ahead, behind = row("sst2", seeds), row("rt", first)
    assert (behind.n, behind.n_run, ahead.n_run) == (5, 5, 10)
    apply("fixed", [ahead, behind], PROTOCOL, primary=True, declared=True, looks=look_sizes())
    assert behind.verdict("holm") == "unresolved" and behind.stopped and not ahead.stopped
    diverged = row("rt", first, diverged=range(7, 12))
    assert (diverged.n, diverged.n_run) == (5, 10)
