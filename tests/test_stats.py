"""normlab.report.stats against textbook values: Holm and Benjamini-Hochberg on Benjamini &
Hochberg's example, the superiority (paired t) and non-inferiority tests on Student's sleep data,
the minimum detectable effect against Cohen's sample size, and the sign test as exact binomials."""

import math

import pytest
from scipy import stats as sps
from statsmodels.stats.power import TTestPower

from normlab.report.stats import NONINFERIOR, SUPERIOR, adjust, bh, by_form, holm, mde, sign_test

# Benjamini & Hochberg (1995), section 4: the 15 p-values of their example. At 0.05 Bonferroni and
# Holm reject the 3 smallest, BH the 4 smallest (their text).
BH95 = [
    0.0001,
    0.0004,
    0.0019,
    0.0095,
    0.0201,
    0.0278,
    0.0298,
    0.0344,
    0.0459,
    0.3240,
    0.4262,
    0.5719,
    0.6528,
    0.7590,
    1.0000,
]
# Student (1908) / Cushny & Peebles: extra hours of sleep of 10 patients under two drugs (R's `sleep`).
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_holm_matches_hand_computation():
    # By hand: (m - i + 1) * p_(i), made non-decreasing, capped at 1.
    hand = [
        15 * 0.0001,
        14 * 0.0004,
        13 * 0.0019,
        12 * 0.0095,
        11 * 0.0201,
        10 * 0.0278,
        10 * 0.0278,
        10 * 0.0278,  # 9 * 0.0298 = 0.268 and 8 * 0.0344 = 0.275 lie below 0.278
        7 * 0.0459,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
    ]
    assert holm(BH95) == pytest.approx(hand, abs=1e-12)
    assert sum(p < 0.05 for p in holm(BH95)) == 3
    assert holm(BH95[::-1])[::-1] == pytest.approx(
        hand, abs=1e-12
    )  # the input order does not matter


def test_bh_matches_hand_computation():
    raw = [15 / (i + 1) * p for i, p in enumerate(BH95)]  # m / i * p_(i), then the running minimum
    hand = [min(raw[i:]) for i in range(15)]
    assert bh(BH95) == pytest.approx(hand, abs=1e-12)
    assert sum(q < 0.05 for q in bh(BH95)) == 4


def test_adjust_skips_rows_without_a_test():
    h, b = adjust([0.01, None, 0.04, float("nan")])
    assert h[1] is None and b[3] is None
    assert h[0] == pytest.approx(0.02) and h[2] == pytest.approx(0.04)  # m = 2, not 4
    assert b[0] == pytest.approx(0.02) and b[2] == pytest.approx(0.04)


def test_superiority_is_the_paired_t_on_students_sleep_data():
    d = [a - b for a, b in zip(SLEEP_1, SLEEP_2)]
    r = by_form(d, SUPERIOR, None)
    # R: t.test(extra ~ group, data = sleep, paired = TRUE): t = -4.0621, df = 9, p-value = 0.002833,
    # mean difference -1.58
    assert r.n == 10 and r.diff == pytest.approx(-1.58)
    assert r.t == pytest.approx(-4.0621, abs=1e-4) and r.p == pytest.approx(0.002833, abs=1e-6)
    # 90% CI: mean ± t(0.95, 9) * sd / sqrt(10), sd of the differences 1.2300
    half = 1.833113 * 1.229995 / math.sqrt(10)
    assert r.ci90 == pytest.approx((-1.58 - half, -1.58 + half), abs=1e-5)


def test_non_inferiority_is_one_sided_against_minus_the_margin():
    d = [b - a for a, b in zip(SLEEP_1, SLEEP_2)]  # drug 2 - drug 1: mean +1.58
    for m in (0.0, 0.5, 2.0):
        r = by_form(d, NONINFERIOR, m)
        # R: t.test(d, mu = -m, alternative = "greater")
        ref = sps.ttest_1samp([x + m for x in d], 0.0, alternative="greater")
        assert r.p == pytest.approx(ref.pvalue, rel=1e-12) and r.t == pytest.approx(ref.statistic)
    # at m = 0 it is the one-sided paired t: half the two-sided p of 0.002833
    assert by_form(d, NONINFERIOR, 0.0).p == pytest.approx(0.002833 / 2, abs=1e-6)
    # a non-inferiority claim without a margin has no test
    assert by_form(d, NONINFERIOR, None).p is None


def test_a_row_without_spread_or_pairs_has_no_test():
    assert by_form([1.0, 1.0], SUPERIOR, 0.1).p is None  # every difference 1.0: sd 0
    assert by_form([1.0], SUPERIOR, 0.1).p is None and by_form([1.0], SUPERIOR, 0.1).n == 1


def test_mde_against_cohens_sample_size_and_statsmodels():
    # Cohen (1988): a paired/one-sample t-test needs 34 pairs (33.4) for d = 0.5 at power 0.8, two-sided 0.05
    assert mde(34, 1.0, 0.05) < 0.5 < mde(33, 1.0, 0.05)
    assert TTestPower().solve_power(effect_size=0.5, power=0.8, alpha=0.05) == pytest.approx(
        33.367, abs=1e-3
    )
    for n, alpha in ((5, 0.05), (10, 0.01), (20, 0.05 / 40)):
        assert mde(n, 1.0, alpha) == pytest.approx(
            TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8), rel=1e-5
        )
    assert mde(5, 2.0, 0.05) == pytest.approx(2 * mde(5, 1.0, 0.05))  # in the differences' units
    # two seeds at a corrected level: beyond statsmodels' range, still solved (power 0.8 there)
    d = mde(2, 1.0, 0.05 / 100)
    crit = sps.t.isf(0.05 / 200, 1)
    assert sps.nct.sf(crit, 1, d * math.sqrt(2)) == pytest.approx(0.8, abs=1e-6)
    assert mde(1, 1.0, 0.05) is None
    # one-sided (non-inferiority): statsmodels' alternative="larger"
    for n, alpha in ((5, 0.05), (10, 0.01)):
        assert mde(n, 1.0, alpha, sides=1) == pytest.approx(
            TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8, alternative="larger"),
            rel=1e-5,
        )


def test_sign_test_exact_binomial_two_sided():
    r = sign_test([-0.19, 0.05, -2.5, -0.02, -0.53, -0.76, -0.07, -0.41])
    assert (r["wins"], r["losses"], r["n"]) == (1, 7, 8)
    assert r["p"] == pytest.approx(2 * 9 / 256)  # 2 * P(X <= 1), X ~ Bin(8, 1/2)
    r = sign_test([1.0, 2.0, 0.0, 3.0, 0.5, 0.1])  # ties dropped: 5 of 5
    assert r["n"] == 5 and r["p"] == pytest.approx(2 / 32)
    assert sign_test([0.0])["p"] is None
