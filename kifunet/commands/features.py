"""``kifunet features``: list the feature sets, or show the planes of one position of an SGF game."""

from __future__ import annotations

from kifunet.errors import CommandError

HELP = "list feature sets and their planes, or show one position's planes (--sgf GAME --move N)"


def add_arguments(p) -> None:
    p.add_argument("name", nargs="?", help="feature set (e.g. maddison, alphago, agz, gonn, agz+nogo_liberties)")
    p.add_argument("--sgf", help="an SGF file: show the position before --move")
    p.add_argument("--move", type=int, default=1, help="1-based move number (default 1)")
    p.add_argument("--allow-suicide", action="store_true", help="New Zealand rules: suicide is legal")


def _print_set(fs) -> None:
    print(f"{fs.name} v{fs.version}: {fs.num_planes} planes ({fs.num_stored} stored, "
          f"{fs.num_planes - fs.num_stored} constant from {', '.join(fs.columns) or '-'})")
    first = 0
    for name, planes, meaning, const in fs.describe():
        span = f"{first}" if planes == 1 else f"{first}-{first + planes - 1}"
        print(f"  {span:>7s}  {name:22s} {'constant' if const else 'stored  '}  {meaning}")
        first += planes


def _show_position(fs, path: str, move: int, allow_suicide: bool) -> int:
    from kifunet.data_prep import coords
    from kifunet.data_prep.planes import replay
    from kifunet.data_prep._jit import announce_compile

    if move < 1:
        raise CommandError(f"--move must be at least 1, not {move}")
    record = replay.load(path)  # a missing or unreadable SGF is reported before the kernels load
    announce_compile()
    positions = list(replay.iter_positions(record, fs, path=path, allow_suicide=allow_suicide))
    if move > len(positions):
        raise CommandError(f"{path} has {len(positions)} moves; --move must be in 1..{len(positions)}")
    pos = positions[move - 1]
    n = pos.planes.shape[0]
    colour = "black" if pos.to_move == 1 else "white"
    print(f"{path}: position before move {move}, {colour} to play, played "
          f"{coords.to_gtp(coords.from_flat(pos.target, n), n)}; ranks: player {pos.player_rank}, "
          f"opponent {pos.opponent_rank}")
    pla = fs.features[0].name in ("stone_colour", "pla_opp_stones")
    header = "   " + " ".join(coords.GTP_COLUMNS[:n])
    print(header)
    names = fs.plane_names()
    for r in range(n):
        row = []
        for c in range(n):
            flat = r * n + c
            if pla and pos.planes[r, c, 0]:
                ch = "X" if colour == "black" else "O"
            elif pla and pos.planes[r, c, 1]:
                ch = "O" if colour == "black" else "X"
            else:
                ch = "."
            if flat == pos.target:
                ch = "*"
            row.append(ch)
        print(f"{n - r:2d} " + " ".join(row))
    print("planes set (count of points):")
    counts = pos.planes.reshape(n * n, -1).sum(axis=0)
    for i, (name, cnt) in enumerate(zip(names, counts)):
        if cnt:
            print(f"  {i:3d} {name:28s} {int(cnt)}")
    return 0


def run(args) -> int:
    from kifunet.data_prep.planes import features

    if args.name is None and args.sgf:
        raise CommandError(f"name the feature set to show, e.g. `kifunet features maddison --sgf {args.sgf}`")
    if args.name is None:
        for name in features.names():
            _print_set(features.get(name))
            print()
        return 0
    fs = features.get(args.name)  # UnknownName: the known names listed
    if args.sgf:
        return _show_position(fs, args.sgf, args.move, args.allow_suicide)
    _print_set(fs)
    return 0
