"""Self-play of a net under the old and the new end-of-game rules: length, how games end, scores.

The net (``pretrained/kgs_cpu_default`` unless ``--checkpoint``) plays both colours in-process:
:func:`kifunet.play.policy.load_policy` for the probabilities and :func:`kifunet.play.move_choice.choose_move`
for the move, at 19x19 with komi 7.5. Games differ by seed: GoNN's sampling (the default; exact sampling for the
first 20 moves; ``--argmax`` plays the top move) with the game's seed. Each seed is played twice, under

* ``old``: the rules before the dead-stone estimate (kept here as :func:`old_choose_move`, verbatim from
  ``play/move_choice.py`` before issue 30: pass after an opponent's pass only when no Tromp-Taylor dame is left
  or the net is unsure, the move cap ``2*N*N``, no resignation), and
* ``new``: :func:`choose_move` with :class:`PlaySettings` defaults (Chinese rules, resign on).

A game ends by two passes, a resignation or the move cap. Each is scored by
:func:`kifunet.data_prep.rules.life_death.estimate` (dead stones removed, area, komi), by GNU Go's ``final_score`` (level
10, Chinese rules: the match runner's referee; ``--referee none`` skips it) and by Tromp-Taylor with every stone
alive. The time ``choose_move`` takes (the estimate included, the net excluded) is measured per
move; the report gives its median and 95th percentile from move ``N*N/2`` on (where the new rules estimate at
every move), beside the net's median time per move.

    python benchmarks/bench_selfplay.py [--games 4] [--rules old,new] [--argmax] [--referee CMD|none]
        [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _old_dame_points(board) -> np.ndarray:
    """bool [N*N]: empty points whose empty region is not one colour's area, every stone counted alive (the old
    rule's dame)."""
    from kifunet.data_prep.rules import scoring
    from kifunet.data_prep.rules.board import EMPTY

    owner = scoring.area_owner(board.stones).reshape(-1)
    return (board.B[0, :-1] == EMPTY) & (owner == EMPTY)


def old_choose_move(probs, board, colour, *, moves_played, opponent_passed, komi, settings, rng, has_pass,
                    cleanup=False):
    """``choose_move`` as it was before the dead-stone estimate (rules 1-4 of that version's docstring)."""
    from kifunet.data_prep.rules import scoring
    from kifunet.play import move_choice
    from kifunet.data_prep.game import BLACK

    n = board.size
    nn = n * n
    max_moves = settings.max_moves if settings.max_moves is not None else 2 * nn
    if settings.resign_margin is not None and moves_played >= nn // 2:
        score = scoring.area_score(board.stones, komi)
        mine = score if colour == BLACK else -score
        if mine < -settings.resign_margin:
            return move_choice.MoveChoice("resign", "resign")
    if moves_played >= max_moves:
        return move_choice.MoveChoice(nn, "move cap")
    legal = board.legal_moves(colour)
    cand = np.zeros(nn + 1, dtype=bool)
    cand[:nn] = legal[:nn] & ~move_choice.own_eyes(board, colour)
    if not cand[:nn].any():
        return move_choice.MoveChoice(nn, "no candidate")
    if opponent_passed and not cleanup:
        cand[:nn] &= _old_dame_points(board)
        if not cand[:nn].any() or float(np.max(np.where(cand, probs, 0.0))) < settings.pass_threshold:
            return move_choice.MoveChoice(nn, "opponent passed")
    cand[nn] = has_pass
    p = np.where(cand, probs, 0.0)
    total = p.sum()
    p = p / total if total > 0 else cand / cand.sum()
    order = np.argsort(-p, kind="stable")
    order = order[p[order] > 0] if (p > 0).any() else order
    if settings.sample:
        k = int(order[move_choice.sample_index(p[order], moves_played, rng)])
        reason = "sampled"
    else:
        k = int(order[0])
        reason = "policy"
    if k == nn:
        return move_choice.MoveChoice(nn, "net passes", float(p[nn]))
    return move_choice.MoveChoice(k, reason, float(p[k]))


def gnugo_score(referee, n: int, komi: float, moves, board) -> float | None:
    """GNU Go's ``final_score`` of the game (black minus white), or None when it fails."""
    from kifunet.play.match import referee_score

    score, how = referee_score(referee, n, komi, moves, board)
    return score if how.startswith("referee final_score") else None


def play_game(policy, rules: str, seed: int, *, sample: bool, komi: float, n: int, referee=None):
    from kifunet.data_prep.rules.board import Board
    from kifunet.data_prep.game import BLACK
    from kifunet.data_prep.rules import life_death, scoring
    from kifunet.play import move_choice

    board = Board(n)
    moves: list[tuple[int, int]] = []
    rng = np.random.default_rng(seed)
    if rules == "old":
        settings = move_choice.PlaySettings(sample=sample, seed=seed, resign=False)
        choose = old_choose_move
    else:
        settings = move_choice.PlaySettings(sample=sample, seed=seed)
        choose = move_choice.choose_move
    colour = BLACK
    ended = "move cap"
    winner_by_resign = None
    choice_ms: list[tuple[int, float]] = []
    net_ms: list[float] = []
    t0 = time.perf_counter()
    while True:
        t = time.perf_counter()
        probs = policy.probabilities(moves, colour)
        net_ms.append(1000 * (time.perf_counter() - t))
        opponent_passed = bool(moves) and moves[-1] == (3 - colour, n * n)
        t = time.perf_counter()
        c = choose(probs, board, colour, moves_played=len(moves), opponent_passed=opponent_passed, komi=komi,
                   settings=settings, rng=rng, has_pass=bool(policy.has_pass))
        choice_ms.append((len(moves), 1000 * (time.perf_counter() - t)))
        if c.move == "resign":
            ended = "resignation"
            winner_by_resign = 3 - colour
            break
        if c.move != n * n:
            board.play(c.move, colour)
        moves.append((colour, c.move))
        if len(moves) >= 2 and moves[-1][1] == n * n and moves[-2][1] == n * n:
            ended = "two passes"
            break
        if c.reason == "move cap":
            ended = "move cap"
            break
        colour = 3 - colour
    est = life_death.estimate(board.stones, colour, seed=seed)
    score = est.score(komi)
    late = [ms for m, ms in choice_ms if m >= n * n // 2]
    gnugo = gnugo_score(referee, n, komi, moves, board) if referee is not None else None
    return {"seed": seed, "rules": rules, "moves": len(moves), "ended": ended,
            "resigned": None if winner_by_resign is None else ("W" if winner_by_resign == 2 else "B") + "+R",
            "score": score, "result": scoring.format_score(score) if winner_by_resign is None else
            ("W" if winner_by_resign == 2 else "B") + "+R",
            "tromp_taylor": scoring.area_score(board.stones, komi), "gnugo": gnugo,
            "dead_stones": int(est.dead().sum()),
            "seconds": round(time.perf_counter() - t0, 1), "net_ms_median": round(float(np.median(net_ms)), 2),
            "choose_ms_median_late": round(float(np.median(late)), 2) if late else None,
            "choose_ms_p95_late": round(float(np.percentile(late, 95)), 2) if late else None,
            "last_moves": [(c, m) for c, m in moves[-6:]]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default=str(ROOT / "pretrained" / "kgs_cpu_default"))
    ap.add_argument("--games", type=int, default=4, help="seeds; each is played under every rule set")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--rules", default="old,new")
    ap.add_argument("--argmax", action="store_true", help="arg-max instead of GoNN sampling (games then repeat)")
    ap.add_argument("--komi", type=float, default=7.5)
    ap.add_argument("--referee", default="gnugo --mode gtp --level 10",
                    help="a GTP program whose final_score is recorded beside ours ('none': skip)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "selfplay.json"))
    args = ap.parse_args()
    from kifunet.play.gtp_client import GtpProcess
    from kifunet.play.policy import load_policy

    referee = None
    if args.referee != "none":
        try:
            referee = GtpProcess(args.referee)
        except (FileNotFoundError, OSError) as e:
            print(f"no referee ({e}): GNU Go's scores are left out")

    policy = load_policy(args.checkpoint, rank="9d")
    n = policy.board_size
    rules = args.rules.split(",")
    games = []
    load = [os.getloadavg()]
    for seed in range(args.first_seed, args.first_seed + args.games):
        for r in rules:
            g = play_game(policy, r, seed, sample=not args.argmax, komi=args.komi, n=n, referee=referee)
            games.append(g)
            print(json.dumps({k: v for k, v in g.items() if k != "last_moves"}), flush=True)
    load.append(os.getloadavg())
    if referee is not None:
        referee.close()
    summary = {}
    for r in rules:
        gs = [g for g in games if g["rules"] == r]
        ended = {}
        for g in gs:
            ended[g["ended"]] = ended.get(g["ended"], 0) + 1
        late = [g["choose_ms_median_late"] for g in gs if g["choose_ms_median_late"] is not None]
        p95 = [g["choose_ms_p95_late"] for g in gs if g["choose_ms_p95_late"] is not None]
        summary[r] = {"games": len(gs), "mean_moves": round(sum(g["moves"] for g in gs) / len(gs), 1),
                      "max_moves": max(g["moves"] for g in gs), "ended": ended,
                      "results": [g["result"] for g in gs],
                      "scored_games": sum(g["resigned"] is None for g in gs),
                      "gnugo_winner_agrees": sum(g["gnugo"] is not None and g["resigned"] is None and
                                                 (g["gnugo"] > 0) == (g["score"] > 0) for g in gs),
                      "gnugo_within_2": sum(g["gnugo"] is not None and g["resigned"] is None and
                                            abs(g["gnugo"] - g["score"]) <= 2 for g in gs),
                      "tromp_taylor_winner_agrees_with_gnugo": sum(
                          g["gnugo"] is not None and g["resigned"] is None and
                          (g["gnugo"] > 0) == (g["tromp_taylor"] > 0) for g in gs),
                      "choose_ms_median_late": round(float(np.median(late)), 2) if late else None,
                      "choose_ms_p95_late_max": max(p95) if p95 else None,
                      "net_ms_median": round(float(np.median([g["net_ms_median"] for g in gs])), 2)}
    report = {"checkpoint": os.path.relpath(args.checkpoint, ROOT), "has_pass": bool(policy.has_pass),
              "sample": not args.argmax, "komi": args.komi, "load_average": load, "summary": summary,
              "games": games}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    for r, s in summary.items():
        print(f"{r}: {s['games']} games, mean {s['mean_moves']} moves (max {s['max_moves']}), ended {s['ended']}, "
              f"choose_move late median {s['choose_ms_median_late']} ms; results {s['results']}; GNU Go agrees on "
              f"the winner of {s['gnugo_winner_agrees']}/{s['scored_games']} scored games, within 2 points "
              f"{s['gnugo_within_2']} (Tromp-Taylor: winner {s['tromp_taylor_winner_agrees_with_gnugo']})")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
