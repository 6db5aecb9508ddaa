"""Pictures of results (matplotlib): learning curves, the top-n accuracy curve, accuracy against nats.

Every function draws into ``ax`` when given one, else into a new :class:`matplotlib.figure.Figure` (no pyplot
state), and returns the figure. Inputs are ``metrics_*.jsonl`` files and eval result dicts; nothing here trains or
evaluates. :func:`learning_curves` draws every numeric field against the training positions seen (losses left,
accuracies middle, squared errors on a third panel); :func:`topn_curve`, :func:`accuracy_vs_nats`,
:func:`value_by_phase` and :func:`learning_vs_published` draw what their names say.
"""

from __future__ import annotations

import json
import math
import os
import textwrap

import numpy as np

from kifunet.data_prep.errors import InvalidValue

X_KEYS = ("samples", "examples", "positions", "step")
LOSS_WORDS = ("loss", "nll", "nats", "cross_entropy")
ACC_WORDS = ("acc", "top")
VALUE_WORDS = ("mse",)


def _figure(ax, ncols=1, size=(6.4, 4.4)):
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=100, layout="constrained")
    axes = fig.subplots(1, ncols)
    return fig, axes


def _legend_below(fig, ax, own: bool) -> None:
    """The legend under the axes when the figure is ours (long entries then cover no point), else in the axes."""
    if own:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=7, frameon=False)
    else:
        ax.legend(fontsize=7)


def read_jsonl(path: str) -> list[dict]:
    """Records of a JSON-lines file; a torn last line (a run still writing) is skipped."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise
    return out


def run_metrics(run_dir: str) -> dict[str, list[dict]]:
    """``{'train': [...], 'eval': [...]}`` from ``metrics_train.jsonl`` and ``metrics_eval.jsonl`` (absent -> [])."""
    out = {}
    for kind in ("train", "eval"):
        p = os.path.join(run_dir, f"metrics_{kind}.jsonl")
        out[kind] = read_jsonl(p) if os.path.exists(p) else []
    return out


def _flatten(rec: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in rec.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "/"))
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v)):
            out[key] = float(v)
    return out


def _x_key(records: list[dict]) -> str | None:
    for k in X_KEYS:
        if any(k in r for r in records):
            return k
    return None


def _series(records: list[dict]) -> tuple[str | None, dict[str, tuple[np.ndarray, np.ndarray]]]:
    flat = [_flatten(r) for r in records]
    xk = _x_key(flat)
    if xk is None:
        return None, {}
    keys = sorted({k for r in flat for k in r} - set(X_KEYS))
    out = {}
    for k in keys:
        pts = [(r[xk], r[k]) for r in flat if xk in r and k in r]
        if pts:
            a = np.asarray(pts, dtype=np.float64)
            out[k] = (a[:, 0], a[:, 1])
    return xk, out


def _is(words, key):
    k = key.lower().rsplit("/", 1)[-1]
    return any(w in k for w in words)


def learning_curves(metrics: dict[str, list[dict]], *, title: str = "", axes=None):
    """Loss and accuracy (and a value head's squared errors) against training positions, train and eval records.

    x is the first of ``samples``, ``examples``, ``positions``, ``step``; fields with equal values are one line named
    after both; losses (``*loss*``, ``*nll*``, ``*nats*``, ``*cross_entropy*``) left, accuracies (``*acc*``,
    ``*top*``) middle, squared errors (``*mse*``) on a third panel. ``axes``: two or three axes to draw into."""
    series = {kind: _series(metrics.get(kind, [])) for kind in ("train", "eval")}
    valued = any(_is(VALUE_WORDS, k) for _, ser in series.values() for k in ser)
    if axes is None:
        fig, axs = _figure(None, ncols=3 if valued else 2, size=(16, 4.2) if valued else (11, 4.2))
    else:
        fig, axs = axes[0].figure, axes
    ax_l, ax_a = axs[0], axs[1]
    ax_v = axs[2] if valued and len(axs) > 2 else None
    drawn = 0
    xlabel = None
    for kind, style in (("train", "-"), ("eval", "o-")):
        xk, ser = series[kind]
        if xk is None:
            continue
        xlabel = xlabel or xk
        sizes = {r.get("eval_positions") for r in metrics.get(kind, [])}
        name = kind  # evaluations all on the same number of test positions say how many
        if kind == "eval" and len(sizes) == 1 and isinstance(next(iter(sizes)), (int, float)):
            name = f"eval ({next(iter(sizes)):,.0f} test positions)"
        same: dict = {}  # a field equal to one drawn already (a policy net's loss is its nats): one line, both names
        for k, (x, y) in ser.items():
            ax = (ax_v if _is(VALUE_WORDS, k) else ax_l if _is(LOSS_WORDS, k) else ax_a if _is(ACC_WORDS, k)
                  else None)
            if ax is None:
                continue
            if ax is ax_a and np.nanmax(y) <= 1.0:
                y = y * 100
            twin = same.get((id(ax), x.tobytes(), y.tobytes()))
            if twin is not None:
                twin.set_label(f"{twin.get_label()} = {k}")
                continue
            same[(id(ax), x.tobytes(), y.tobytes())] = ax.plot(x, y, style, ms=3, lw=1.2, label=f"{name} {k}")[0]
            drawn += 1
    label = {"step": "training step", "positions": "training positions", None: "?"}.get(
        xlabel, f"training {xlabel} (positions)")
    panels = [(ax_l, "loss (nats)"), (ax_a, "accuracy (%)")]
    if ax_v is not None:
        panels.append((ax_v, "value head: squared error"))
    from matplotlib.ticker import EngFormatter

    for ax, yl in panels:
        ax.set_xlabel(label)
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 1.5M, not 1.5 with "1e6" in the corner
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    if not drawn:
        ax_l.text(0.5, 0.5, "no metrics recorded", ha="center", va="center", transform=ax_l.transAxes)
    if title:
        fig.suptitle(title)
    return fig


def topn_curve(results: dict[str, dict], *, max_n: int = 20, published_points: bool = True, ax=None):
    """Top-n accuracy (%) against n for each ``{label: result block}`` (a block has ``rank_histogram``)."""
    from kifunet.eval import metrics as M

    own = ax is None
    fig, ax = _figure(ax, size=(7, 4.4 + 0.14 * (len(results) + 3)))
    for label, block in results.items():
        y = M.topn_curve(block, max_n) * 100
        ax.plot(np.arange(1, len(y) + 1), y, "o-", ms=3, label=label)
    if published_points:
        from kifunet.eval import published as P

        for r in P.move_prediction():
            if r.id not in ("maddison_12x128", "gonn_mar2018_kgs_12x192", "alphago_13x256"):
                continue
            pts = [(k, getattr(r, f"top{k}")) for k in (1, 4, 10) if isinstance(getattr(r, f"top{k}"), float)]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "s", ms=6, mfc="none",
                    label=f"{r.source}, {r.net} (published)")
    ax.set_xlabel("n (the played move among the net's n most likely moves)")
    ax.set_ylabel("top-n accuracy (%)")
    ax.set_xlim(0.5, max_n + 0.5)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    _legend_below(fig, ax, own)
    return fig


def accuracy_vs_nats(ours: list[tuple[str, float, float, str]], *, ax=None):
    """Top-1 (%) against CE (nats): ``ours`` is ``[(label, top1 fraction, ce nats, mode)]``, mode
    ``single`` or ``ensemble``; GoNN's accuracy/nats table and the published rows with both numbers beside."""
    from kifunet.eval import published as P

    own = ax is None
    fig, ax = _figure(ax, size=(7, 4.4 + 0.14 * (len(ours) + 2)))
    pts = P.accuracy_nats()
    ax.plot([p["ce"] for p in pts], [p["top1"] for p in pts], "s--", color="grey", mfc="none",
            label="GoNN GoGoD nets (published)")
    for p in pts:
        ax.annotate(f"{'~' if p.get('elo_approx') else ''}{p['elo']} Elo", (p["ce"], p["top1"]),
                    textcoords="offset points", xytext=(4, 4), fontsize=7, color="grey")
    rows = [r for r in P.move_prediction() if r.ce is not None and isinstance(r.top1, float)]
    ax.plot([r.ce for r in rows], [r.top1 for r in rows], "D", color="tab:green", mfc="none",
            label="GoNN README nets (published)")
    markers = {"single": "o", "ensemble": "*"}
    colours = [f"C{i}" for i in range(10) if i not in (2, 7)]  # not the published points' green and grey
    for i, (label, top1, ce, mode) in enumerate(ours):
        ax.plot([ce], [100 * top1], markers.get(mode, "o"), ms=9 if mode == "ensemble" else 7,
                color=colours[i % len(colours)],
                label=f"{label}: {'8-symmetry ensemble' if mode == 'ensemble' else 'single pass'}")
    ax.set_xlabel("cross-entropy of the played move (nats)")
    ax.set_ylabel("top-1 accuracy (%)")
    ax.invert_xaxis()
    ax.grid(alpha=0.3)
    _legend_below(fig, ax, own)
    return fig


def value_by_phase(blocks: dict[str, dict], *, axes=None):
    """Per ``{label: result block with a value}``: value MSE per game phase (solid) beside the constant
    predictor's (dashed), and the winner accuracy per phase (dotted line: 50%); phases without a known result left
    out."""
    if axes is None:
        fig, (ax_m, ax_w) = _figure(None, ncols=2, size=(11, 4.2))
    else:
        fig, (ax_m, ax_w) = axes[0].figure, axes
    labels: list[str] = []
    for block in blocks.values():
        labels += [k for k, g in block["by_phase"].items() if "value" in g and g["value"]["known"] and k not in labels]
    labels.sort(key=lambda k: int(k.split("-")[0].rstrip("+")))
    x = np.arange(len(labels))
    for i, (label, block) in enumerate(blocks.items()):
        groups = [block["by_phase"].get(k, {}).get("value") for k in labels]
        mse = [g["mse"] if g and g["known"] else np.nan for g in groups]
        base = [g["baseline_mse"] if g and g["known"] else np.nan for g in groups]
        win = [100 * g["winner_accuracy"] if g and g["decided"] else np.nan for g in groups]
        line = ax_m.plot(x, mse, "o-", ms=4, label=f"{label}")[0]
        ax_m.plot(x, base, "s--", ms=3, color=line.get_color(), mfc="none", label=f"{label}: constant predictor")
        ax_w.plot(x, win, "o-", ms=4, color=line.get_color(), label=label)
    ax_w.axhline(50, color="grey", lw=0.8, ls=":")
    for ax, yl in ((ax_m, "value MSE (known results)"), (ax_w, "winner accuracy (%)")):
        ax.set_xticks(x)
        ax.set_xticklabels(labels)
        ax.set_xlabel("move number")
        ax.set_ylabel(yl)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    return fig


def published_end_points(rows=None) -> tuple[list, list]:
    """``(placed, left_out)``: the published move-prediction rows with a training length (``steps``, in positions)
    and a top-1, and the rest. ``rows``: :func:`kifunet.eval.published.move_prediction` by default."""
    from kifunet.eval import published as P

    rows = P.move_prediction() if rows is None else rows
    placed = [r for r in rows if r.steps is not None and r.top1 is not None]
    return placed, [r for r in rows if r not in placed]


def _left_out_caption(left_out) -> str:
    counts: dict[str, int] = {}
    for r in left_out:
        counts[r.source] = counts.get(r.source, 0) + 1
    names = ", ".join(f"{s} ({n})" for s, n in counts.items())
    return f"left out, no training length published: {names}" if names else ""


def learning_vs_published(eval_records: list[dict], *, finals=(), label: str = "ours", rows=None, ax=None):
    """Test top-1 (%) against training positions seen (log axis): ``eval_records`` as a line, ``finals`` (``[(label,
    positions, top1 fraction)]``) as stars, each published row with a training length as one point (a range as
    its midpoint with an error bar), the rows left out named in a caption box."""
    from kifunet.eval import published as P

    fig, ax = _figure(ax, size=(10, 6))
    flat = [_flatten(r) for r in eval_records]
    xk = next((k for k in X_KEYS[:3] if any(k in r for r in flat)), None)
    if xk is None:
        raise InvalidValue("eval records hold no positions seen (samples, examples or positions)")
    pts = np.asarray([(r[xk], r["top1"]) for r in flat if xk in r and "top1" in r], dtype=np.float64)
    if not len(pts):
        raise InvalidValue("eval records hold no top1")
    pts = pts[np.argsort(pts[:, 0], kind="stable")]
    y = pts[:, 1] * 100 if np.nanmax(pts[:, 1]) <= 1.0 else pts[:, 1]
    ax.plot(pts[:, 0], y, "o-", ms=4, lw=1.5, color="black", label=f"{label}: test top-1 during training")
    last = pts[-1, 0]
    for flabel, positions, top1 in finals:
        ax.plot([positions], [100 * top1], "*", ms=12, label=f"{flabel}: {100 * top1:.1f}%")
    placed, left_out = published_end_points(rows)
    for r in placed:
        lo, hi = (r.top1 if isinstance(r.top1, tuple) else (r.top1, r.top1))
        mid = (lo + hi) / 2
        kgs = r.dataset.name == "KGS"
        sec = " (secondary)" if r.secondary or r.steps_secondary else ""
        text = (f"{r.source}{sec}, {r.net}, {r.dataset.name}: {P.fmt_pct(r.top1)}% at {r.steps / 1e6:.4g}M "
                f"({r.steps / last:.0f}x ours)")
        ax.errorbar([r.steps], [mid], yerr=[[mid - lo], [hi - mid]] if hi > lo else None, fmt="o" if kgs else "s",
                    ms=7, mfc=None if kgs else "none", capsize=3, label=text)
    ax.set_xscale("log")
    ax.set_xlabel("training positions seen (samples, log scale)")
    ax.set_ylabel("test top-1 accuracy (%)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left")
    caption = _left_out_caption(left_out)
    if caption:
        from matplotlib.offsetbox import AnchoredText

        box = AnchoredText(textwrap.fill(caption, 60), loc="lower right", prop={"fontsize": 7}, frameon=True)
        box.patch.set_alpha(0.8)
        ax.add_artist(box)
    return fig


def ours_from_results(results: list[tuple[str, dict]]) -> list[tuple[str, float, float, str]]:
    """``(label, top1, ce, mode)`` for :func:`accuracy_vs_nats` from ``(path, eval result)`` pairs; the label names
    the run and the data (:func:`kifunet.eval.tables.result_label`)."""
    from kifunet.eval.tables import result_label

    out = []
    for path, res in results:
        for mode, block in res["results"].items():
            out.append((result_label(path, res), block["accuracy"]["1"], block["cross_entropy_nats"], mode))
    return out
