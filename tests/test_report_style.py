"""Readable outputs: labelled axes, one colour + line style per norm across every figure, captions
in the Markdown only; LaTeX tables mark each column's best and the runs table breaks across pages."""

import json

from test_report import make_run

from normlab.campaigns.xu2019.paper_tables import TABLES, norm_table
from normlab.campaigns.xu2019.protocol import protocol
from normlab.norms import NORMS
from normlab.report import figures as F
from normlab.report import find_runs
from normlab.report.aggregate import NORM_LABELS, Grid
from normlab.report.norm_cards import COLORS, DASHES, card
from normlab.report.run_tables import runs_table
from normlab.report.tables import Table


def test_every_shipped_norm_declares_its_own_look():
    # each norm's config declares its card: a label, a colour, a dash and a row order
    own = [n for n, f in NORMS.items() if f.__module__.startswith("normlab.")]
    for name in own:
        assert set(card(name)) == {"label", "color", "dash", "order"}, name
    pairs = [(COLORS[n], DASHES[n]) for n in own]
    assert len(set(map(str, pairs))) == len(pairs)  # no two norms look alike
    assert len({card(n)["order"] for n in own}) == len(own)  # one row order
    for _, norms in TABLES.values():  # within one table's comparison, colours differ too
        assert len({COLORS[n] for n in norms}) == len(norms)


def test_figures_share_styles_label_axes_and_keep_captions_out(tmp_path, monkeypatch):
    curves = [
        {"step": s, "split": sp, "loss": 1.0 / s} for s in (1, 2, 3) for sp in ("train", "valid")
    ]
    for norm in ("none", "layernorm", "layernorm_simple", "detachnorm"):
        for seed in (1, 2):
            make_run(tmp_path / "runs", "rt", norm, seed, 70.0 + seed, curves=curves)
    grid = Grid(find_runs([tmp_path / "runs"]))
    drawn = []
    monkeypatch.setattr(F.plt, "close", drawn.append)
    styles = {}
    for key in ("curves", "overfitting", "detachnorm"):
        title, norms, panels, what = F.FIGURES[key]
        caption = F.figure(grid, key, title, norms, panels, tmp_path / "fig", what)
        assert caption and "rt: real" in caption
        fig = drawn[-1]
        title = fig._suptitle.get_text()
        assert (
            title
            == {
                "curves": "Train and valid loss per norm",
                "overfitting": "Overfitting: LayerNorm vs LayerNorm-simple",
                "detachnorm": "DetachNorm vs LayerNorm-simple vs w/o Norm",
            }[key]
        )
        assert [t.get_text() for t in fig.texts] == [
            title
        ]  # the caption is in report.md, not in the image
        for ax in fig.axes:
            # every axis has its unit: losses in nats, the rise above the minimum in %
            assert ax.get_xlabel() == "training step (updates)"
            assert "(nats)" in ax.get_ylabel() or "(% of minimum" in ax.get_ylabel(), (
                ax.get_ylabel()
            )
            if "% of minimum" in ax.get_ylabel():  # a blow-up must not flatten a 2% rise
                assert ax.get_yscale() == "symlog"
            for line in ax.get_lines():
                label = line.get_label().split(" (n=")[0]
                styles.setdefault(label, set()).add((line.get_color(), str(line.get_linestyle())))
    assert set(styles) == {
        NORM_LABELS[n] for n in ("none", "layernorm", "layernorm_simple", "detachnorm")
    }
    assert all(len(s) == 1 for s in styles.values()), styles  # the same look in every figure
    assert styles["LayerNorm"] == {("tab:blue", "-")}


def test_latex_bolds_each_columns_best_with_its_direction(tmp_path):
    for seed in (1, 2):
        make_run(tmp_path, "enwik8", "none", seed, 1.10, metric="bpc", hib=False)
        make_run(
            tmp_path, "enwik8", "detachnorm", seed, 1.20 + 0.01 * seed, metric="bpc", hib=False
        )
        make_run(tmp_path, "enwik8", "layernorm_simple", seed, 1.05, metric="bpc", hib=False)
        make_run(tmp_path, "rt", "none", seed, 70.0, status="diverged")
        make_run(tmp_path, "rt", "detachnorm", seed, 71.0 + seed)
        make_run(tmp_path, "rt", "layernorm_simple", seed, 72.5)
    tex = norm_table(Grid(find_runs([tmp_path])), "table2", *TABLES["table2"]).latex()
    rows = {line.split(" & ")[0]: line.split(" & ") for line in tex.splitlines() if " & " in line}
    # bpc: lower is better; acc: higher; ties at the printed precision are all bold; the paper's
    # columns and the Improvement rows (differences, not scores) are never ranked
    assert rows["LayerNorm-simple"][1].startswith(r"\textbf{1.050")
    assert not rows["w/o Norm"][1].startswith(r"\textbf")
    assert rows["DetachNorm"][3].startswith(r"\textbf{72.50") and rows["LayerNorm-simple"][
        3
    ].startswith(r"\textbf{72.50")
    assert rows["w/o Norm"][3].startswith("Diverge")
    assert not any(
        c.startswith(r"\textbf") for c in rows["Improvement (LayerNorm-simple $-$ DetachNorm)"]
    )
    assert not any(
        c.startswith(r"\textbf") for r in rows.values() for c in (r[2], r[4])
    )  # (paper) columns
    assert "Bold: the best mean of each column." in tex


def test_single_row_columns_are_not_bolded():
    t = Table(
        "x", "X", ["norm", "a"], rows=[["LayerNorm", "1.00"], ["AdaNorm", "–"]], best={1: True}
    )
    assert r"\textbf" not in t.latex()


def test_runs_table_is_a_longtable(tmp_path):
    for seed in range(1, 4):
        make_run(tmp_path, "rt", "layernorm", seed, 70.0)
    tex = runs_table(Grid(find_runs([tmp_path]))).latex()
    assert r"\begin{longtable}" in tex and r"\endhead" in tex and r"\begin{table}" not in tex
    assert (
        tex.count(r"\\") == 1 + 2 + 3
    )  # caption line, the header (first page, later pages), 3 runs


def _sweep_grid(root, norms_settings):
    curves = [
        {"step": s, "split": sp, "loss": 1.0 / s} for s in (1, 2, 3) for sp in ("train", "valid")
    ]
    for i, (norm, setting) in enumerate(norms_settings):
        d = make_run(root / str(i), "rt", norm, 1, 70.0, curves=curves)
        summary = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps({**summary, "setting": setting}))
    return Grid(find_runs(sorted((root).iterdir())))


def test_each_setting_of_a_sweep_is_its_own_line_in_every_figure(tmp_path, monkeypatch):
    # a sweep over AdaNorm's C and a second lr for LayerNorm: every setting must be told apart
    settings = [("adanorm", {})] + [("adanorm", {"C": c}) for c in (2, 3, 4, 5)]
    settings += [("layernorm", {}), ("layernorm", {"lr": 0.001})]
    grid = _sweep_grid(tmp_path / "runs", settings)
    drawn = []
    monkeypatch.setattr(F.plt, "close", drawn.append)
    for key in ("curves", "adanorm"):
        title, norms, panels, what = F.FIGURES[key]
        assert F.figure(grid, key, title, norms, panels, tmp_path / "fig", what)
        fig = drawn[-1]
        for ax in fig.axes:
            looks = {
                line.get_label().split(" (n=")[0]: (
                    line.get_color(),
                    str(line.get_linestyle()),
                    line.get_marker(),
                )
                for line in ax.get_lines()
            }
            assert set(looks) == {
                "AdaNorm",
                "AdaNorm (C=2)",
                "AdaNorm (C=3)",
                "AdaNorm (C=4)",
                "AdaNorm (C=5)",
                "LayerNorm",
                "LayerNorm (lr=0.001)",
            }
            assert len(set(looks.values())) == len(looks), looks  # no two settings look alike
            # colour family and dash stay the norm's; the default setting is the norm's own look
            assert looks["LayerNorm"] == ("tab:blue", "-", "None")
            assert (
                looks["LayerNorm (lr=0.001)"][1] == "-"
                and looks["LayerNorm (lr=0.001)"][2] != "None"
            )
            assert (
                len({looks[k][0] for k in looks if k.startswith("AdaNorm")}) == 5
            )  # five shades of green
            legend = ax.get_legend()
            if legend is not None:  # the legend names each setting and shows the same marker
                texts = [t.get_text().split(" (n=")[0] for t in legend.get_texts()]
                assert sorted(texts) == sorted(looks)
                markers = {
                    t.get_text().split(" (n=")[0]: h.get_marker()
                    for t, h in zip(legend.get_texts(), legend.legend_handles)
                }
                assert markers == {k: v[2] for k, v in looks.items()}
        assert (
            fig._suptitle.get_text()
            == {"curves": "Train and valid loss per norm", "adanorm": "AdaNorm vs LayerNorm"}[key]
        )


def test_a_figure_title_names_only_the_norms_it_shows(tmp_path, monkeypatch):
    grid = _sweep_grid(tmp_path / "runs", [("none", {}), ("layernorm_simple", {})])
    drawn = []
    monkeypatch.setattr(F.plt, "close", drawn.append)
    title, norms, panels, what = F.FIGURES["detachnorm"]
    # a figure named after DetachNorm is not drawn without it
    assert F.figure(grid, "detachnorm", title, norms, panels, tmp_path / "fig", what) is None
    grid = _sweep_grid(tmp_path / "runs2", [("none", {}), ("detachnorm", {})])
    assert F.figure(grid, "detachnorm", title, norms, panels, tmp_path / "fig", what).startswith(
        "DetachNorm vs w/o Norm. "
    )
    assert drawn[-1]._suptitle.get_text() == "DetachNorm vs w/o Norm"


def test_a_task_declared_outside_the_learning_regime_is_named_in_its_panels(tmp_path, monkeypatch):
    curves = [
        {"step": s, "split": sp, "loss": 1.0 / s} for s in (1, 2) for sp in ("train", "valid")
    ]
    for task in (
        "iwslt15_en_vi",
        "rt",
    ):  # the campaign's protocol declares IWSLT15 not learning at mini
        make_run(tmp_path / "runs", task, "layernorm", 2, 1.0, curves=curves)
    drawn = []
    monkeypatch.setattr(F.plt, "close", drawn.append)
    title, norms, panels, what = F.FIGURES["curves"]
    grid = Grid(find_runs([tmp_path / "runs"]), protocol=protocol())  # the campaign's declares it
    F.figure(grid, "curves", title, norms, panels, tmp_path, what)
    heads = {ax.get_title().split(":")[0] for ax in drawn[-1].axes}
    assert heads == {"iwslt15_en_vi (not learning)", "rt"}, heads
