"""Seeds added until a row resolves: the family-wise error of the primary family holds under the
adding, by simulation of the study's shape (seconds), and the scalar path the report takes agrees
with the simulated one."""

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from normlab.campaigns.xu2019.findings import CLAIMS, look_sizes
from normlab.report import stats as S
from normlab.report.claims import margin, settings

ALPHA = settings()["alpha"]
STUDIES = 10_000


def family_shape() -> tuple[np.ndarray, np.ndarray]:
    """The primary family's rows: every claim on the six tasks that learn at mini (eight tasks
    less the declared not-learning one, less one for cells that did not train): 30 rows, the
    non-inferiority claim's 6 among them, each with its metric's margin in seed-sd units 0.2."""
    ni = np.array([c.form == S.NONINFERIOR for c in CLAIMS for _ in range(6)])
    return ni, np.full(ni.size, 0.2)


def null_study(rng, ni, margins, n_seeds):
    """Differences at the null's boundary: -margin for non-inferiority rows, 0 for the others."""
    d = rng.standard_normal((STUDIES, ni.size, n_seeds))
    return d - np.where(ni, margins, 0.0)[None, :, None]


def test_the_look_sizes_are_the_declared_ones():
    q = settings()["sequential"]
    assert look_sizes() == list(range(q["first"], q["max_seeds"] + 1, q["step"])) == [5, 10, 15, 20]
    assert margin("acc") > 0


def test_familywise_error_holds_when_seeds_are_added_until_rows_resolve():
    rng = np.random.default_rng(20261205)
    ni, margins = family_shape()
    sizes = look_sizes()
    d = null_study(rng, ni, margins, sizes[-1])
    rejected, used, _ = S.sequential_family(d, ni, margins, sizes, ALPHA)
    fwer = rejected.any(axis=1).mean()
    mc = 3 * np.sqrt(ALPHA * (1 - ALPHA) / STUDIES)
    assert fwer <= ALPHA + mc, fwer
    assert (used >= sizes[0]).all() and used.mean() > sizes[0]  # rows did gain seeds
    # the same adding without the alpha / K per look: the error is well above alpha, so the test
    # above could fail
    looked = np.zeros_like(rejected)
    for n in sizes:  # K = 1 at every look
        r, _, _ = S.sequential_family(d[:, :, :n], ni, margins, [n], ALPHA)
        looked |= r
    assert looked.any(axis=1).mean() > ALPHA + mc


def test_the_report_path_agrees_with_the_simulated_one():
    rng = np.random.default_rng(7)
    ni, margins = family_shape()
    sizes = look_sizes()
    # effects from none to 2 seed sds: some rows resolve early, some late, some never
    d = rng.normal(np.linspace(0.0, 2.0, ni.size)[None, :, None], 1.0, (1, ni.size, sizes[-1]))
    rejected, used, _ = S.sequential_family(d, ni, margins, sizes, ALPHA)
    # each row as the report sees it after its last look: K x its smallest p over the looks made
    p_seq = [
        S.sequential_p(
            list(d[0, r, : used[0, r]]),
            S.NONINFERIOR if ni[r] else S.SUPERIOR,
            float(margins[r]),
            sizes,
        )
        for r in range(ni.size)
    ]
    holm = multipletests(p_seq, method="holm")[1]
    assert list(holm < ALPHA) == list(rejected[0])
    assert S.holm_rows(np.array([p_seq]))[0] == pytest.approx(holm)
    assert 0 < rejected.sum() < ni.size and len(set(used[0])) > 1


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
