"""A Go board as a matplotlib figure: stones, coordinates, the policy as a heatmap over legal points, top-k labels.

:func:`load_position` gives the board before a move of an SGF game, :func:`draw_board` the figure (rows from the
top, GTP letters above and below). Only legal points are shaded, by the policy renormalised over the legal moves
(pass included); the top-k legal moves carry their rank, and the side panel lists them with the pass probability
and the move played (outlined in red).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kifunet.data_prep import coords
from kifunet.data_prep.errors import InvalidValue
from kifunet.eval.legality import top_moves

WOOD = "#dcb35c"


@dataclasses.dataclass
class BoardPosition:
    """One position of a game: what the picture and the model need."""

    path: str
    move_number: int  # 1-based: the board before this move
    size: int
    stones: np.ndarray  # int8 (N, N): 0 empty, 1 black, 2 white
    legal: np.ndarray  # bool (N*N + 1,): legal for the side to move; pass legal
    to_move: int
    target: int  # the move played (flat, pass = N*N)
    last_move: int | None  # the previous move (flat), None at move 1 or after a pass
    planes: np.ndarray | None  # uint8 (N, N, C) of the feature set, None if no feature set was asked for
    player_rank: int
    opponent_rank: int
    black: str = ""
    white: str = ""


def load_position(sgf_path: str, move_number: int, feature_set: str | None = "maddison") -> BoardPosition:
    """The position before move ``move_number`` (1-based) of the SGF's main line, with legality and planes."""
    from kifunet.data_prep.rules import analysis
    from kifunet.data_prep.planes import features, replay

    record = replay.load(sgf_path)
    a = replay.analyse_game(record, flags=analysis.F_LIBS_AFTER_PLA, path=sgf_path)
    total = len(a)
    if not 1 <= move_number <= total:
        raise InvalidValue(f"{sgf_path} has moves 1..{total}; asked for move {move_number}")
    t = move_number - 1
    n = a.size
    planes = None
    player_rank = opponent_rank = -128
    info = record.info
    black = int(a.to_move[t]) == 1
    player_rank = info.black_rank if black else info.white_rank
    opponent_rank = info.white_rank if black else info.black_rank
    if feature_set is not None:
        fs = features.get(feature_set)
        enc = replay.encode_game(record, fs, path=sgf_path)
        cols = {k: v[t:t + 1] for k, v in enc.columns().items()}
        planes = fs.assemble(enc.planes[t:t + 1], cols)[0]
    last = int(a.target[t - 1]) if t > 0 and int(a.target[t - 1]) != n * n else None
    legal = np.concatenate([a.legal[t].astype(bool), [True]])
    return BoardPosition(path=sgf_path, move_number=move_number, size=n, stones=a.stones[t].reshape(n, n).copy(),
                         legal=legal, to_move=int(a.to_move[t]), target=int(a.target[t]), last_move=last,
                         planes=planes, player_rank=int(player_rank), opponent_rank=int(opponent_rank),
                         black=info.black, white=info.white)


def gtp(flat: int, n: int) -> str:
    return coords.to_gtp(coords.from_flat(int(flat), n), n)


def star_points(n: int) -> list[tuple[int, int]]:
    if n < 7:
        return []
    e = 2 if n < 13 else 3
    lines = [e, n - 1 - e] + ([n // 2] if n % 2 == 1 and n >= 9 else [])
    pts = [(r, c) for r in lines for c in lines]
    if n < 13:  # 9x9: the four 3-3 points and tengen
        pts = [(r, c) for r, c in pts if (r == c == n // 2) or (r != n // 2 and c != n // 2)]
    return pts


def masked_probs(logits, legal) -> np.ndarray:
    """softmax over legal moves of float logits ``[N*N + 1]`` (illegal moves get 0)."""
    z = np.where(np.asarray(legal, bool), np.asarray(logits, np.float64), -np.inf)
    z = z - z.max()
    p = np.exp(z)
    return p / p.sum()


def _xy(r, c, n):
    """Plot coordinates of board point (row ``r`` from the top, column ``c``)."""
    return c, n - 1 - r


def _figure(ax, side_panel: bool):
    """(figure, board axes): a new figure sized for the side panel, or ``ax`` and its figure."""
    from matplotlib.figure import Figure

    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=(10.4 if side_panel else 7.2, 7.2), dpi=100)
    if side_panel:
        return fig, fig.add_axes((0.03, 0.04, 0.62, 0.84))
    return fig, fig.add_axes((0.06, 0.04, 0.88, 0.84))


def _draw_grid(ax, n: int) -> None:
    """The wood, the lines (above the heatmap, below the stones) and the star points."""
    from matplotlib.patches import Circle, Rectangle

    ax.set_facecolor(WOOD)
    ax.add_patch(Rectangle((-0.5, -0.5), n, n, facecolor=WOOD, edgecolor="none", zorder=0))
    for i in range(n):
        ax.plot([0, n - 1], [i, i], color="black", lw=0.7, zorder=2.5)  # above the heatmap, below stones
        ax.plot([i, i], [0, n - 1], color="black", lw=0.7, zorder=2.5)
    for r, c in star_points(n):
        ax.add_patch(Circle(_xy(r, c, n), 0.09, color="black", zorder=2.5))


def _draw_heatmap(fig, ax, stones, probs, legal, top_k: int, side_panel: bool) -> list[tuple[int, float]]:
    """Shade the legal empty points by ``probs``, number the top ``top_k`` and add the colour bar (with the side
    panel); returns the top moves as (flat, probability)."""
    from matplotlib import colors as mcolors
    from matplotlib import patheffects

    if legal is None:
        raise ValueError("a heatmap needs the legality mask")
    n = stones.shape[0]
    p = np.asarray(probs, dtype=np.float64)
    lg = np.asarray(legal, dtype=bool)[: n * n] & (stones.reshape(-1) == 0)
    img = np.full((n, n), np.nan)
    vals = np.where(lg, p[: n * n], np.nan).reshape(n, n)
    img[:, :] = vals[::-1, :]  # y = n-1-row
    cmap = mcolors.LinearSegmentedColormap.from_list("kifunet_heat", ["#fff7bc", "#fe9929", "#cc4c02",
                                                                      "#662506"]).with_extremes(
        bad=(0.0, 0.0, 0.0, 0.0))
    finite = np.isfinite(img).any()
    vmax = float(np.nanmax(img)) if finite else 1.0
    vmin = float(np.nanmin(img)) if finite else 0.0
    if vmax <= vmin:  # a flat policy: one colour
        vmin = 0.0
    # colours span the legal points' own range (a near-uniform policy still shows its preferences);
    # the colour bar gives the probabilities
    im = ax.imshow(img, origin="lower", extent=(-0.5, n - 0.5, -0.5, n - 0.5), cmap=cmap,
                   norm=mcolors.PowerNorm(gamma=0.5, vmin=vmin, vmax=max(vmax, 1e-12)), zorder=2, alpha=0.85,
                   interpolation="nearest")
    top = [(i, float(p[i])) for i in top_moves(p[: n * n], lg, int(top_k))]
    for k, (i, _) in enumerate(top, 1):
        r, c = divmod(i, n)
        ax.text(*_xy(r, c, n), str(k), ha="center", va="center", fontsize=10, fontweight="bold", color="white",
                path_effects=[patheffects.withStroke(linewidth=2.5, foreground="black")], zorder=5)
    if side_panel:
        cb = fig.colorbar(im, cax=fig.add_axes((0.685, 0.04, 0.018, 0.84)))
        cb.set_label("policy probability on legal points (renormalised)")
    return top


def _draw_stones(ax, stones, played: int | None, last_move: int | None) -> None:
    """The stones, a ring on the last move and a red square on the move played."""
    from matplotlib.patches import Circle, Rectangle

    n = stones.shape[0]
    for r in range(n):
        for c in range(n):
            v = int(stones[r, c])
            if v:
                ax.add_patch(Circle(_xy(r, c, n), 0.46, facecolor="black" if v == 1 else "white",
                                    edgecolor="black", lw=0.8, zorder=3))
    if last_move is not None and last_move < n * n:
        r, c = divmod(int(last_move), n)
        ax.add_patch(Circle(_xy(r, c, n), 0.16, facecolor="none", edgecolor="red" if stones[r, c] else "black",
                            lw=1.5, zorder=4))
    if played is not None and played < n * n:
        r, c = divmod(int(played), n)
        x, y = _xy(r, c, n)
        ax.add_patch(Rectangle((x - 0.48, y - 0.48), 0.96, 0.96, facecolor="none", edgecolor="red", lw=2.0,
                               zorder=6))


def _label_axes(ax, n: int, title: str) -> None:
    """GTP column letters above and below, row numbers left and right, the title."""
    letters = coords.GTP_COLUMNS[:n]
    ax.set_xlim(-0.9, n - 0.1)
    ax.set_ylim(-0.9, n - 0.1)
    ax.set_aspect("equal")
    ax.set_xticks(range(n))
    ax.set_xticklabels(list(letters))
    ax.set_yticks(range(n))
    ax.set_yticklabels([str(i + 1) for i in range(n)])
    ax.tick_params(top=True, labeltop=True, right=True, labelright=True, length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    if title:
        ax.set_title(title, fontsize=10, pad=22)


def _side_text(fig, n: int, top, probs, played: int | None) -> None:
    """The side panel: the top moves with their probabilities, the pass probability and the move played."""
    lines = ["top moves (legal):"] + [f"{k}. {gtp(i, n):>4}  {100 * q:5.2f}%" for k, (i, q) in enumerate(top, 1)]
    lines.append(f"pass   {100 * float(np.asarray(probs)[n * n]):5.2f}%")
    if played is not None:
        played_p = float(np.asarray(probs)[played])
        lines += ["", f"played: {gtp(played, n)}  {100 * played_p:.2f}%"]
    fig.text(0.79, 0.88, "\n".join(lines), va="top", ha="left", family="monospace", fontsize=9)


def draw_board(stones, *, probs=None, legal=None, top_k: int = 5, played: int | None = None,
               last_move: int | None = None, title: str = "", ax=None, side_panel: bool = True):
    """Draw a board; returns the matplotlib Figure (the module docstring's conventions).

    ``stones`` int (N, N) with 0/1/2; ``probs`` float ``[N*N + 1]`` (pass last) or None; ``legal`` bool
    ``[N*N + 1]`` or ``[N*N]`` (required with ``probs``); ``played`` / ``last_move`` flat indices."""
    stones = np.asarray(stones)
    n = stones.shape[0]
    fig, ax = _figure(ax, side_panel)
    _draw_grid(ax, n)
    top = [] if probs is None else _draw_heatmap(fig, ax, stones, probs, legal, top_k, side_panel)
    _draw_stones(ax, stones, played, last_move)
    _label_axes(ax, n, title)
    if side_panel and probs is not None:
        _side_text(fig, n, top, probs, played)
    return fig


def draw_position(pos: BoardPosition, logits=None, *, top_k: int = 5, title: str | None = None, ax=None,
                  side_panel: bool = True):
    """:func:`draw_board` for a :class:`BoardPosition`; ``logits`` ``[N*N + 1]`` from a predictor, or None."""
    probs = masked_probs(logits, pos.legal) if logits is not None else None
    if title is None:
        who = "Black" if pos.to_move == 1 else "White"
        title = f"{pos.path.rsplit('/', 1)[-1]}: before move {pos.move_number}, {who} to play"
    return draw_board(pos.stones, probs=probs, legal=pos.legal, top_k=top_k, played=pos.target,
                      last_move=pos.last_move, title=title, ax=ax, side_panel=side_panel)
