"""eval/board_image.py and eval/plots.py: stones where the SGF puts them, heat on legal points only, curves."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kifunet.eval import board_image as bi
from kifunet.eval import plots

# 9x9: a ko just taken by Black at E5 (4,4 is the retake point, banned for White at move 2) and a Black eye at
# J1 (8,8: suicide for White). Rows from the top: SGF 'ee' = (4, 4).
KO_SGF = b"(;FF[4]GM[1]SZ[9]BR[3d]WR[5d]AB[ed][de][ef][ih][hi]AW[fd][ee][ff][ge];B[fe];W[aa];B[bb])"


@pytest.fixture
def ko_sgf(tmp_path):
    p = tmp_path / "ko.sgf"
    p.write_bytes(KO_SGF)
    return str(p)


def test_load_position_stones_legality_and_planes(ko_sgf):
    pos = bi.load_position(ko_sgf, 2, "maddison")
    assert pos.size == 9 and pos.to_move == 2 and pos.move_number == 2
    assert pos.target == 0 and pos.last_move == 4 * 9 + 5  # W[aa] to play; B[fe] = (4, 5) just played
    black = {(r, c) for r, c in zip(*np.nonzero(pos.stones == 1))}
    white = {(r, c) for r, c in zip(*np.nonzero(pos.stones == 2))}
    assert black == {(3, 4), (4, 3), (5, 4), (7, 8), (8, 7), (4, 5)}
    assert white == {(3, 5), (5, 5), (4, 6)}  # (4, 4) was captured
    assert not pos.legal[4 * 9 + 4]  # ko
    assert not pos.legal[8 * 9 + 8]  # suicide for White
    assert pos.legal[0] and pos.legal[81]  # an open point; pass
    assert pos.legal[:81].sum() == 81 - 9 - 2
    assert pos.planes.shape == (9, 9, 36) and pos.player_rank == 4 and pos.opponent_rank == 2
    # the legal plane of the position agrees with the replay's legality
    np.testing.assert_array_equal(pos.planes[..., 13].reshape(-1).astype(bool), pos.legal[:81])
    with pytest.raises(ValueError, match="moves 1..3"):
        bi.load_position(ko_sgf, 4, None)


def _pixel(fig, ax, x, y):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    buf = np.asarray(canvas.buffer_rgba())
    px, py = ax.transData.transform((x, y))
    return buf[int(round(buf.shape[0] - py)), int(round(px)), :3]


def test_heatmap_covers_legal_points_only(ko_sgf):
    from matplotlib import colors

    pos = bi.load_position(ko_sgf, 2, None)
    probs = bi.masked_probs(np.zeros(82), pos.legal)
    assert probs[4 * 9 + 4] == 0 and probs[0] == pytest.approx(1 / 71)
    fig = bi.draw_position(pos, np.zeros(82), top_k=3)
    ax = fig.axes[0]
    wood = np.array(colors.to_rgb(bi.WOOD)) * 255

    def at(r, c):  # inside the cell of (r, c), away from the grid lines
        return _pixel(fig, ax, c + 0.3, 9 - 1 - r + 0.3).astype(float)

    assert np.abs(at(4, 4) - wood).max() <= 2  # ko point: bare wood
    assert np.abs(at(8, 8) - wood).max() <= 2  # suicide point: bare wood
    assert np.abs(at(0, 1) - wood).max() > 40  # a legal point: coloured
    assert np.abs(at(2, 2) - wood).max() > 40
    # labels: GTP letters without I above and below, numbers 9..1 down the side
    for axis, want in ((ax.xaxis, list("ABCDEFGHJ")), (ax.yaxis, [str(i) for i in range(1, 10)])):
        ticks = axis.get_major_ticks()
        assert [t.label1.get_text() for t in ticks] == want  # bottom / left
        assert [t.label2.get_text() for t in ticks] == want and all(t.label2.get_visible() for t in ticks)
    texts = {t.get_text() for t in ax.texts}
    assert {"1", "2", "3"} <= texts
    side = "\n".join(t.get_text() for t in fig.texts)
    assert "played:  A9" in side.replace("played: A9", "played:  A9") and "pass" in side


def test_top_k_labels_sit_on_the_most_likely_legal_points():
    stones = np.zeros((9, 9), np.int8)
    stones[0, 0] = 1
    legal = np.ones(82, bool)
    legal[0] = False
    legal[10] = False  # pretend (1, 1) is illegal
    p = np.full(82, 0.001)
    p[0], p[10], p[40], p[41], p[80] = 0.5, 0.4, 0.05, 0.03, 0.02  # illegal ones must not be labelled
    fig = bi.draw_board(stones, probs=p, legal=legal, top_k=3)
    ax = fig.axes[0]
    labels = {t.get_text(): t.get_position() for t in ax.texts if t.get_text() in "123"}
    assert labels == {"1": (4, 4), "2": (5, 4), "3": (8, 0)}  # (x=col, y=8-row): E5, F5, J1


def test_board_svg_and_png(tmp_path, ko_sgf):
    pos = bi.load_position(ko_sgf, 2, None)
    fig = bi.draw_position(pos, None)
    fig.savefig(tmp_path / "b.svg")
    fig.savefig(tmp_path / "b.png")
    assert (tmp_path / "b.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_show_command_without_checkpoint(tmp_path, ko_sgf, capsys):
    from kifunet.cli import main

    assert main(["show", ko_sgf, "--move", "2", "--out", str(tmp_path / "x.png"), "--no-net"]) == 0
    assert (tmp_path / "x.png").stat().st_size > 1000
    with pytest.raises(SystemExit):  # one or the other
        main(["show", ko_sgf, "--move", "2", "--out", str(tmp_path / "x.png"), "--no-net", "--checkpoint", "r"])
    capsys.readouterr()
    # the default net plays 19x19: a 9x9 game is drawn without its policy, and stderr says why
    assert main(["show", ko_sgf, "--move", "2", "--out", str(tmp_path / "y.png")]) == 0
    assert "drawn without a policy" in capsys.readouterr().err and (tmp_path / "y.png").stat().st_size > 1000
    assert main(["show", ko_sgf, "--move", "9", "--out", str(tmp_path / "x.png")]) == 2
    assert "moves 1..3" in capsys.readouterr().err
    assert main(["show", ko_sgf, "--move", "1", "--out", str(tmp_path / "x.jpg")]) == 2


@pytest.mark.slow
def test_show_draws_the_default_net_s_policy_when_none_is_named(tmp_path, monkeypatch):
    from kifunet.data_prep import paths
    from kifunet.cli import main
    from kifunet.eval.runs import sample_sgf

    drawn = []
    draw = bi.draw_position
    monkeypatch.setattr(bi, "draw_position", lambda pos, logits, **kw: drawn.append((logits, kw)) or draw(pos, logits,
                                                                                                        **kw))
    assert main(["show", sample_sgf(), "--move", "30", "--out", str(tmp_path / "d.png")]) == 0
    assert main(["show", sample_sgf(), "--move", "30", "--out", str(tmp_path / "n.png"), "--checkpoint",
                 str(paths.default_net())]) == 0
    (default, kw), (named, _) = drawn
    assert default is not None and default.shape == (19 * 19 + 1,) and np.array_equal(default, named)
    assert "before move 30" in kw["title"], kw["title"]


def test_show_names_a_rank_in_the_title_only_for_a_net_that_reads_one(tmp_path, monkeypatch, capsys):
    """The default net (gonn planes, no rank embedding) predicts the same for every rank: no "as 5d" in its title,
    and --rank says so; kgs_cpu_small (Maddison's rank planes) is predicted as the rank asked for."""
    from kifunet.data_prep import paths
    from kifunet.cli import main
    from kifunet.eval.runs import sample_sgf

    titles = []
    draw = bi.draw_position
    monkeypatch.setattr(bi, "draw_position", lambda pos, logits, **kw: titles.append(kw["title"]) or draw(pos, logits,
                                                                                                        **kw))
    small = paths.default_net().parent / "kgs_cpu_small"
    for net in (paths.default_net(), small):
        assert main(["show", sample_sgf(), "--move", "30", "--out", str(tmp_path / "x.png"), "--rank", "5d",
                     "--checkpoint", str(net)]) == 0
    default, rank_aware = (t.splitlines()[0] for t in titles)
    assert default.endswith("before move 30, White to play") and "5d" not in titles[0], titles[0]
    assert rank_aware.endswith("before move 30, White to play as 5d"), rank_aware
    assert "has no rank input, so the rank changes nothing" in capsys.readouterr().err


def test_learning_curves_plot_every_metric(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "metrics_train.jsonl", "w") as f:
        for i in range(1, 4):
            f.write(json.dumps({"step": i, "samples": 256 * i, "loss": 5.0 / i, "top1": 0.1 * i, "lr": 0.1}) + "\n")
        f.write('{"step": 4, "samp')  # a run still writing: torn last line
    (run / "metrics_eval.jsonl").write_text(json.dumps({"samples": 512, "val": {"nll": 2.5, "accuracy": 0.25}}) + "\n")
    m = plots.run_metrics(str(run))
    assert len(m["train"]) == 3 and len(m["eval"]) == 1
    fig = plots.learning_curves(m, title="run")
    ax_l, ax_a = fig.axes[:2]
    lines = {ln.get_label(): ln for ln in ax_l.get_lines() + ax_a.get_lines()}
    assert set(lines) == {"train loss", "train top1", "eval val/nll", "eval val/accuracy"}
    np.testing.assert_allclose(lines["train loss"].get_xdata(), [256, 512, 768])
    np.testing.assert_allclose(lines["train top1"].get_ydata(), [10, 20, 30])  # fractions shown as percent
    np.testing.assert_allclose(lines["eval val/nll"].get_ydata(), [2.5])
    assert ax_l.get_xlabel() == "training samples (positions)"
    fig.savefig(tmp_path / "curves.png")


def test_topn_and_accuracy_vs_nats():
    block = {"count": 4, "rank_histogram": [2, 1, 0, 1] + [0] * 358}
    fig = plots.topn_curve({"ours": block}, max_n=10)
    ax = fig.axes[0]
    ours = [ln for ln in ax.get_lines() if ln.get_label() == "ours"][0]
    np.testing.assert_allclose(ours.get_ydata(), [50, 75, 75] + [100] * 7)
    madd = [ln for ln in ax.get_lines() if ln.get_label().startswith("Maddison")][0]
    assert list(madd.get_xdata()) == [1, 10] and list(madd.get_ydata()) == [55.2, 94.0]
    fig = plots.accuracy_vs_nats([("tiny", 0.30, 3.1, "single"), ("tiny", 0.32, 3.0, "ensemble")])
    ax = fig.axes[0]
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert "tiny: single pass" in labels and "tiny: 8-symmetry ensemble" in labels
    gonn = [ln for ln in ax.get_lines() if ln.get_label() == "GoNN GoGoD nets (published)"][0]
    assert list(gonn.get_xdata()) == [2.73, 2.31, 1.95, 1.77, 1.67, 1.55]
    assert ax.xaxis_inverted()


def _published_rows():
    """Three published rows: two with a training length (one a range), one without."""
    from kifunet.eval import published as P

    ds = {"KGS": P.Dataset("k", "KGS", "KGS x"), "GoGoD": P.Dataset("g", "GoGoD", "GoGoD x")}
    return [P.Result(id="a", source="Src A", dataset=ds["KGS"], inputs="i", net="net a", eval="single", top1=56.8,
                     steps=205_000_000),
            P.Result(id="b", source="Src B", dataset=ds["GoGoD"], inputs="i", net="net b", eval="single",
                     top1=(57.1, 57.6), steps=128_000_000),
            P.Result(id="c", source="Src C", dataset=ds["KGS"], inputs="i", net="net c", eval="single", top1=60.4)]


def test_learning_vs_published_places_our_curve_and_the_published_end_points():
    recs = [{"step": 2, "positions": 500.0, "top1": 0.30}, {"step": 1, "positions": 250.0, "top1": 0.25},
            {"step": 3, "positions": 1000.0, "top1": 0.35, "nats": 2.0}]
    fig = plots.learning_vs_published(recs, finals=[("whole", 1000, 0.36)], label="run", rows=_published_rows())
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    by_label = {ln.get_label(): ln for ln in ax.lines}
    ours = by_label["run: test top-1 during training"]
    np.testing.assert_allclose(ours.get_xdata(), [250, 500, 1000])  # sorted by positions
    np.testing.assert_allclose(ours.get_ydata(), [25, 30, 35])  # fractions drawn as percent
    star = by_label["whole: 36.0%"]
    assert (list(star.get_xdata()), list(star.get_ydata())) == ([1000], [pytest.approx(36)])
    published = {c.get_label(): c.lines[0] for c in ax.containers}  # one errorbar container per row
    a_label, a = next((k, ln) for k, ln in published.items() if k.startswith("Src A"))
    assert (list(a.get_xdata()), list(a.get_ydata())) == ([205_000_000], [56.8])
    assert a_label == "Src A, net a, KGS: 56.8% at 205M (205000x ours)"  # times our last positions (1000)
    b = next(ln for k, ln in published.items() if k.startswith("Src B"))
    assert list(b.get_xdata()) == [128_000_000] and b.get_ydata()[0] == pytest.approx(57.35)  # range: midpoint
    assert len(published) == 2  # Src C has no training length: left out, named in the caption
    from matplotlib.text import Text

    texts = [t.get_text() for t in fig.findobj(Text)]
    assert "left out, no training length published: Src C (1)" in texts
    placed, left_out = plots.published_end_points()  # the real data: GoNN's samples, AlphaGo Zero's none
    assert {r.id for r in placed} >= {"gonn_mar2018_kgs_12x192", "darkforest_kgs"}
    assert {"agz_sl_kgs", "agz_sl_pro"} <= {r.id for r in left_out}
    with pytest.raises(ValueError, match="positions seen"):
        plots.learning_vs_published([{"step": 1, "top1": 0.3}], rows=[])


def test_tables_command_draws_the_learning_figure(tmp_path, capsys):
    from kifunet.cli import main

    from kifunet.eval import metrics as M

    run = tmp_path / "run"
    (run / "eval").mkdir(parents=True)
    (run / "metrics_eval.jsonl").write_text(json.dumps({"step": 1, "positions": 1000, "top1": 0.3}) + "\n")
    bd = M.Breakdown(362)
    bd.update(np.array([0, 3]), np.array([0.5, 1.5]), move_number=[1, 30], player_rank=[8, 8], to_move=[1, 2])
    (run / "eval" / "fox_test.json").write_text(json.dumps({
        "format": "kifunet-eval", "format_version": 1, "run": {"name": "run", "positions": 1000},
        "dataset": {"split": "test", "evaluated": 2, "spec": {"text": "x", "preset": "fox-pro"}},
        "settings": {}, "results": {"single": bd.to_dict()}}))
    assert main(["tables", "--learning-figure", str(tmp_path / "lc.png"), str(run)]) == 0
    assert (tmp_path / "lc.png").read_bytes()[:4] == b"\x89PNG"
    assert "wrote " in capsys.readouterr().err
    assert main(["tables", "--learning-figure", str(tmp_path / "lc.pdf"), str(run)]) == 2
    assert "lc.pdf: --learning-figure must end in .png or .svg" in capsys.readouterr().err
    assert main(["tables", "--learning-figure", str(tmp_path / "x.png"), str(run / "eval" / "fox_test.json")]) == 2
    assert "needs a RUN directory holding metrics_eval.jsonl" in capsys.readouterr().err


def test_accuracy_vs_nats_legend_entries_are_distinct_and_name_the_data():
    """The default net's four results (KGS and Fox, whole split and first 100,000, single pass and ensemble):
    one legend entry each, naming the data and how much of it."""
    from kifunet.data_prep import paths
    from kifunet.eval import tables

    results = tables.find_results([str(paths.default_net())])
    fig = plots.accuracy_vs_nats(plots.ours_from_results(results))
    ours = [ln.get_label() for ln in fig.axes[0].get_lines() if ln.get_label().startswith(paths.DEFAULT_NET)]
    assert len(ours) == sum(len(res["results"]) for _, res in results) >= 6
    assert len(set(ours)) == len(ours), ours
    assert all(("gonn-kgs test" in x) != ("fox-pro test" in x) for x in ours), ours
    assert f"{paths.DEFAULT_NET} on gonn-kgs test, whole split (954,190 positions): single pass" in ours
    assert f"{paths.DEFAULT_NET} on fox-pro test, first 100,000 of 545,569 positions: 8-symmetry ensemble" in ours


def test_learning_figure_stars_say_how_much_of_the_split_was_evaluated(tmp_path):
    from kifunet.data_prep import paths
    from kifunet.commands.tables import learning_figure

    drawn = {}
    real = plots.learning_vs_published
    try:
        plots.learning_vs_published = lambda recs, **kw: drawn.update(kw) or real(recs, **kw)
        learning_figure([str(paths.default_net())], str(tmp_path / "lvp.png"))
    finally:
        plots.learning_vs_published = real
    labels = [f[0] for f in drawn["finals"]]
    assert "gonn-kgs test, first 100,000 of 954,190 positions, single pass" in labels
    assert "gonn-kgs test, whole split (954,190 positions), single pass" in labels
    assert not [x for x in labels if "first" in x and "whole" in x] and len(set(labels)) == len(labels)


def test_learning_curves_draw_equal_fields_once_and_say_how_many_positions_each_evaluation_saw():
    train = [{"positions": 100 * i, "loss": 3.0 / i, "nats": 3.0 / i, "top1": 0.1 * i} for i in (1, 2, 3)]
    evals = [{"positions": 300, "nats": 2.0, "loss": 2.0, "top1": 0.3, "eval_positions": 10000}]
    fig = plots.learning_curves({"train": train, "eval": evals})
    labels = sorted(ln.get_label() for ax in fig.axes[:2] for ln in ax.get_lines())
    assert labels == ["eval (10,000 test positions) loss = nats", "eval (10,000 test positions) top1",
                      "train loss = nats", "train top1"], labels
    assert fig.axes[0].xaxis.get_major_formatter()(1_500_000, 0) == "1.5M"


def test_long_legends_go_below_the_axes():
    """Our entries name run, data and mode: under the axes they cover no point (in a given ``ax``, the axes')."""
    fig = plots.accuracy_vs_nats([("a run on some data, whole split (1,000 positions)", 0.3, 3.1, "single")])
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
    fig = plots.topn_curve({"x": {"count": 1, "rank_histogram": [1] + [0] * 361}}, max_n=5)
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    assert plots.accuracy_vs_nats([("r", 0.3, 3.1, "single")], ax=ax) is ax.figure and ax.get_legend() is not None
