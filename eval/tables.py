"""Our eval results beside the published rows, as Markdown or HTML tables.

:func:`comparison_rows` gives one row per published number (:mod:`kifunet.eval.published`) and one per evaluation
mode of each of our results (eval JSON files or run directories, :func:`find_results`), each of ours naming its
data in a short cell with a note number (:func:`dataset_notes` gives the full spec once).
:func:`two_domain_rows` puts top-1 on KGS beside top-1 on professional games (a result's domain is its build
preset's, a published row's its dataset's name). :func:`value_rows` tables value blocks (eval JSON version 2);
:func:`render_profiles` (``kifunet tables --by``) one row per group of a profile breakdown (version 3; an older
result gets one line naming its file).
"""

from __future__ import annotations

import glob
import html
import os

from kifunet.data_prep import ranks
from kifunet.data_prep.errors import InvalidValue
from kifunet.eval import published as P
from kifunet.eval.evaluate import MODE_TEXT, MODES, load_result

COLUMNS = [("result", "result"), ("data", "dataset / split"), ("inputs", "inputs"), ("net", "net"),
           ("params", "params"), ("eval", "eval"), ("top1", "top-1 %"), ("top4", "top-4 %"),
           ("top10", "top-10 %"), ("ce", "CE (nats)"), ("steps", "steps (positions)")]


def find_results(paths) -> list[tuple[str, dict]]:
    """``(path, result)`` for every eval JSON named, or found under ``DIR/eval/`` and ``DIR/`` of a run dir."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            files = sorted(glob.glob(os.path.join(p, "eval", "*.json"))) + sorted(glob.glob(os.path.join(p, "*.json")))
            found = []
            for f in files:
                try:
                    found.append((f, load_result(f)))
                except (ValueError, OSError):
                    continue  # config.json and other files of a run directory
            if not found:
                raise FileNotFoundError(f"{p}: no eval results (run `kifunet eval --checkpoint {p} ...` first)")
            out += found
        else:
            out.append((p, load_result(p)))
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def dataset_label(res: dict) -> str:
    """A short name of the data ``res`` was measured on: the build preset (else the folder's name), the split and
    how much was evaluated (``fox-pro test, first 100,000 of 545,569 positions``)."""
    ds = res["dataset"]
    n = ds["evaluated"]
    rows = ds.get("rows", n)
    if n >= rows:
        part = f"whole split ({rows:,} positions)"
    elif [list(r) for r in ds.get("ranges", [[0, n]])] == [[0, n]]:
        part = f"first {n:,} of {rows:,} positions"
    else:
        part = f"{n:,} of {rows:,} positions"
    return f"{_data_name(ds)}, {part}"


def result_label(path: str, res: dict, mode: str | None = None) -> str:
    """``NAME on DATA[: MODE]`` for a legend: the run's name (else the result file's name), :func:`dataset_label`,
    and the evaluation mode's text when ``mode`` is given; distinct for distinct results of one run."""
    name = (res.get("run", {}).get("name") or os.path.splitext(os.path.basename(path))[0]) + _as_rank(res)
    return f"{name} on {dataset_label(res)}" + (f": {MODE_TEXT[mode]}" if mode else "")


def _as_rank(res: dict) -> str:
    """`` as 5d`` for a result of ``kifunet eval --as-rank 5d`` (every mover told that rank), else nothing."""
    as_rank = res.get("settings", {}).get("as_rank")
    return "" if as_rank is None else f" as {ranks.rank_to_text(as_rank)}"


def _data_name(ds: dict) -> str:
    name = ds.get("spec", {}).get("preset") or os.path.basename(os.path.normpath(ds.get("path") or "")) or "dataset"
    return f"{name} {ds['split']}"


def our_rows(path: str, res: dict) -> list[dict]:
    run, ds, st = res.get("run", {}), res["dataset"], res["settings"]
    name = run.get("name") or os.path.basename(os.path.dirname(os.path.abspath(path))) or path
    if run.get("step") is not None:
        name += f" @ step {run['step']}"
    name += _as_rank(res)
    rows = []
    for mode in MODES:
        r = res["results"].get(mode)
        if r is None:
            continue
        acc = r["accuracy"]
        ev = MODE_TEXT[mode] + (", legal mask" if st.get("legal_mask") else "")
        samples = run.get("positions")
        rows.append({
            "ours": True, "mode": mode, "result": f"ours: {name}", "data": dataset_label(res),
            "data_name": _data_name(ds), "dataset": ds["spec"]["text"],
            "inputs": f"{run.get('feature_set', '?')} planes", "net": str(run.get("model", "?")),
            "params": f"{run['params']:,}" if isinstance(run.get("params"), int) else "-", "eval": ev,
            "top1": _pct(acc.get("1")), "top4": _pct(acc.get("4")), "top10": _pct(acc.get("10")),
            "ce": f"{r['cross_entropy_nats']:.3f}", "steps": P.fmt_steps(samples) if samples else "-",
            "top1_value": acc.get("1"), "ce_value": r["cross_entropy_nats"], "preset": ds["spec"].get("preset"),
        })
    return rows


def published_choices() -> list[str]:
    """What ``which`` of :func:`published_rows` may be: ``all``, a dataset name in lower case, a dataset id."""
    names = {r.dataset.name.lower() for r in P.move_prediction()} | {r.dataset.id for r in P.move_prediction()}
    return ["all", *sorted(names)]


def published_rows(which: str = "all") -> list[dict]:
    """The published rows of dataset ``which`` (see :func:`published_choices`); another value is a ValueError."""
    choices = published_choices()
    if which not in choices:
        raise InvalidValue(f"no published rows for {which!r}; choose from {', '.join(choices)}")
    rows = []
    for r in P.move_prediction():
        if which not in ("all", r.dataset.name.lower(), r.dataset.id):
            continue
        approx = set(r.approx)

        def pct(field):
            v = getattr(r, field)
            return ("~" if field in approx and v is not None else "") + P.fmt_pct(v)

        rows.append({
            "ours": False, "mode": r.eval, "result": r.source + (" (secondary)" if r.secondary else ""),
            "data": r.dataset.spec, "dataset": r.dataset.spec, "inputs": r.inputs, "net": r.net,
            "params": P.fmt_params(r),
            "eval": MODE_TEXT[r.eval] + (f" ({r.note})" if r.note and r.eval == "ensemble" else ""),
            "top1": pct("top1"), "top4": pct("top4"), "top10": pct("top10"),
            "ce": "-" if r.ce is None else f"{r.ce:.3f}", "steps": P.fmt_steps(r.steps, r.steps_secondary),
            "preset": r.dataset.kifunet_preset,
        })
    return rows


def comparison_rows(results: list[tuple[str, dict]], which: str = "all") -> list[dict]:
    """The published rows of ``which``, then ours, our datasets numbered (:func:`dataset_notes`)."""
    rows = published_rows(which)
    for path, res in results:
        rows += our_rows(path, res)
    _mark_datasets(rows)
    return rows


def _mark_datasets(rows: list[dict]) -> None:
    """Number our rows' distinct datasets (by their full description) in order of first use: each row's ``data``
    cell ends in ``[n]`` and its ``note`` is note n of :func:`dataset_notes`."""
    by_preset = {}
    for r in P.move_prediction():
        if r.dataset.kifunet_preset:
            by_preset.setdefault(r.dataset.kifunet_preset, r.dataset.spec)
    numbers: dict[str, int] = {}
    for r in rows:
        if not r["ours"]:
            continue
        n = numbers.setdefault(r["dataset"], len(numbers) + 1)
        r["data"] = f"{r['data']} [{n}]"
        r["note"] = f"[{n}] {r['data_name']}: {r['dataset']}"
        if r.get("preset") in by_preset:
            r["note"] += (f"; built with preset {r['preset']}, the filters and split of \"{by_preset[r['preset']]}\" "
                          "(archive edition may differ)")


def dataset_notes(rows: list[dict]) -> list[str]:
    """The notes of :func:`comparison_rows`' rows, each once: the full description of every dataset our rows were
    measured on, and whether its build preset gave it a published dataset's filters and split."""
    return list(dict.fromkeys(r["note"] for r in rows if r.get("note")))


OUR_DOMAINS = {"gonn-kgs": "kgs", "fox-pro": "pro", "gonn-gogod": "pro"}  # build preset -> domain (docstring)
PUBLISHED_DOMAINS = {"KGS": "kgs", "professional games": "pro"}  # published dataset name -> domain
TWO_DOMAIN_COLUMNS = [("result", "result"), ("net", "net"), ("eval", "eval"), ("kgs", "KGS top-1 %"),
                      ("pro", "pro top-1 %"), ("gap", "pro - KGS (points)"), ("kgs_ce", "KGS CE (nats)"),
                      ("pro_ce", "pro CE (nats)"), ("tests", "test sets")]


def _gap(kgs, pro) -> str:
    return "-" if kgs is None or pro is None else f"{pro - kgs:+.1f}"


def two_domain_rows(results: list[tuple[str, dict]]) -> list[dict]:
    """Published pairs, then ours: top-1 on KGS and on professional games side by side. A result's domain is its
    build preset's; a published pair is two rows of one source, net and mode, ours one row per run and mode."""
    rows = []
    by_key: dict = {}
    for r in P.move_prediction():
        dom = PUBLISHED_DOMAINS.get(r.dataset.name)
        if dom is not None and isinstance(r.top1, float):
            by_key.setdefault((r.source, r.net, r.eval), {})[dom] = r
    for (source, net, mode), pair in by_key.items():
        if set(pair) != {"kgs", "pro"}:
            continue
        k, p = pair["kgs"], pair["pro"]
        rows.append({"ours": False, "result": source, "net": net, "eval": MODE_TEXT[mode],
                     "kgs": P.fmt_pct(k.top1), "pro": P.fmt_pct(p.top1), "gap": _gap(k.top1, p.top1),
                     "kgs_ce": "-" if k.ce is None else f"{k.ce:.3f}", "pro_ce": "-" if p.ce is None else f"{p.ce:.3f}",
                     "tests": f"KGS: {k.dataset.spec}; pro: {p.dataset.spec}", "kgs_value": k.top1,
                     "pro_value": p.top1})
    ours: dict = {}
    for path, res in results:
        dom = OUR_DOMAINS.get(res["dataset"]["spec"].get("preset"))
        if dom is None:
            continue
        for r in our_rows(path, res):
            slot = ours.setdefault((r["result"], r["mode"]), {})
            old = slot.get(dom)
            if old is None or res["dataset"]["evaluated"] > old[1]["dataset"]["evaluated"]:
                slot[dom] = (r, res)
    for (name, mode), pair in ours.items():
        if set(pair) != {"kgs", "pro"}:
            continue
        (k, kres), (p, pres) = pair["kgs"], pair["pro"]
        kv, pv = 100 * k["top1_value"], 100 * p["top1_value"]
        tests = "; ".join(f"{d}: preset {x['dataset']['spec']['preset']}, split {x['dataset']['split']}, "
                          f"{x['dataset']['evaluated']:,} positions" for d, x in (("KGS", kres), ("pro", pres)))
        rows.append({"ours": True, "result": name, "net": f"{k['net']}, {k['params']} params", "eval": k["eval"],
                     "kgs": k["top1"], "pro": p["top1"], "gap": _gap(kv, pv), "kgs_ce": k["ce"], "pro_ce": p["ce"],
                     "tests": tests, "kgs_value": kv, "pro_value": pv})
    return rows


def accuracy_nats_rows(results: list[tuple[str, dict]]) -> list[dict]:
    rows = [{"ours": False, "result": "GoNN (GoGoD nets)", "top1": f"{p['top1']:.0f}", "ce": f"{p['ce']:.2f}",
             "elo": ("~" if p.get("elo_approx") else "") + str(p["elo"]), "data": "GoGoD (GoNN's test set)",
             "sort": p["top1"] / 100} for p in P.accuracy_nats()]
    for path, res in results:
        for r in our_rows(path, res):
            rows.append({"ours": True, "result": f"{r['result']} ({MODE_TEXT[r['mode']]})", "top1": r["top1"],
                         "ce": r["ce"], "elo": "-", "data": r["data"], "sort": r["top1_value"]})
    return sorted(rows, key=lambda r: r["sort"])


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|")


def render_markdown(rows: list[dict], columns=COLUMNS) -> str:
    head = "| " + " | ".join(h for _, h in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = []
    for r in rows:
        cells = [_md_escape(r.get(k, "")) for k, _ in columns]
        if r.get("ours"):
            cells[0] = f"**{cells[0]}**"
        body.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, sep] + body)


def render_html(rows: list[dict], columns=COLUMNS) -> str:
    out = ["<table class=\"kifunet-comparison\">",
           "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for _, h in columns) + "</tr></thead>", "<tbody>"]
    for r in rows:
        cls = ' class="ours"' if r.get("ours") else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(r.get(k, '')))}</td>" for k, _ in columns) + "</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


NATS_COLUMNS = [("result", "result"), ("top1", "top-1 %"), ("ce", "CE (nats)"), ("elo", "relative Elo"),
                ("data", "dataset / split")]
VALUE_COLUMNS = [("result", "result"), ("eval", "eval"), ("known", "known results"), ("mse", "value MSE"),
                 ("baseline", "constant MSE"), ("winner", "winner %"), ("decided", "decided")]


def _num(x, digits: int = 4) -> str:
    return "-" if x is None or x != x else f"{x:.{digits}f}"


def _value_cells(v: dict) -> dict:
    return {"known": f"{v['known']:,}", "mse": _num(v["mse"]), "baseline": _num(v["baseline_mse"]),
            "winner": _pct(None if v["winner_accuracy"] != v["winner_accuracy"] else v["winner_accuracy"]),
            "decided": f"{v['decided']:,}"}


def value_rows(results: list[tuple[str, dict]]) -> list[dict]:
    """One row per result and mode that has a value block (a net with a value head; see the module docstring)."""
    rows = []
    for path, res in results:
        for r in our_rows(path, res):
            v = res["results"][r["mode"]].get("value")
            if v is not None:
                rows.append({"ours": True, "result": r["result"], "eval": r["eval"], **_value_cells(v)})
    return rows


def render(results: list[tuple[str, dict]], fmt: str = "markdown", which: str = "all") -> str:
    """The full comparison: move prediction table, notes, two-domain table (when one of ours has both domains),
    accuracy-vs-nats table, value table (when a result has a value block)."""
    rows = comparison_rows(results, which)
    nats = accuracy_nats_rows(results)
    notes = dataset_notes(rows)
    values = value_rows(results)
    domains = two_domain_rows(results)
    domains = domains if any(r["ours"] for r in domains) else []
    domain_title = "Two domains: KGS and professional games, one net each (published pair, then ours)"
    value_title = "Value head (ours): game result from the position"
    value_note = ("value MSE over the positions whose game result is known (a draw's target is 0); constant MSE: "
                  "always predicting their mean result; winner %: the value's sign names the winner, over the "
                  "positions of games with a winner")
    if fmt == "markdown":
        parts = ["## Move prediction (published rows, then ours)", "", render_markdown(rows)]
        if notes:
            parts += [""] + [f"- {n}" for n in notes]
        if domains:
            parts += ["", f"## {domain_title}", "", render_markdown(domains, TWO_DOMAIN_COLUMNS)]
        parts += ["", "## Accuracy and nats (GoNN's GoGoD nets and ours)", "", render_markdown(nats, NATS_COLUMNS)]
        if values:
            parts += ["", f"## {value_title}", "", render_markdown(values, VALUE_COLUMNS), "", value_note]
        return "\n".join(parts)
    if fmt == "html":
        parts = ["<h2>Move prediction (published rows, then ours)</h2>", render_html(rows)]
        if notes:
            parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
        if domains:
            parts += [f"<h2>{html.escape(domain_title)}</h2>", render_html(domains, TWO_DOMAIN_COLUMNS)]
        parts += ["<h2>Accuracy and nats (GoNN's GoGoD nets and ours)</h2>", render_html(nats, NATS_COLUMNS)]
        if values:
            parts += [f"<h2>{html.escape(value_title)}</h2>", render_html(values, VALUE_COLUMNS),
                      f"<p>{html.escape(value_note)}</p>"]
        return "\n".join(parts)
    raise InvalidValue(f"unknown format {fmt!r} (markdown or html)")


def breakdown_markdown(res: dict, mode: str = "single") -> str:
    """Per-phase, per-rank and per-colour tables of one result and mode, as Markdown (with the value columns of a
    net with a value head)."""
    block = res["results"][mode]
    cols = [("group", "group"), ("count", "positions"), ("top1", "top-1 %"), ("top4", "top-4 %"),
            ("top10", "top-10 %"), ("ce", "CE (nats)")]
    mask = ", legal mask" if res.get("settings", {}).get("legal_mask") else ""
    parts = [f"**{res.get('run', {}).get('name', '?')}**, {MODE_TEXT[mode]}{mask}, "
             f"{res['dataset']['evaluated']} positions: {res['dataset']['spec']['text']}"]
    if "value" in block:  # a net with a value head: its columns too
        cols += [c for c in VALUE_COLUMNS if c[0] in ("known", "mse", "baseline", "winner")]
    for key, title in (("by_phase", "move number"), ("by_rank", "player rank"), ("by_colour", "colour")):
        rows = [{"group": g, "count": str(b["count"]), "top1": _pct(b["accuracy"]["1"]),
                 "top4": _pct(b["accuracy"]["4"]), "top10": _pct(b["accuracy"]["10"]),
                 "ce": f"{b['cross_entropy_nats']:.3f}", **(_value_cells(b["value"]) if "value" in b else {})}
                for g, b in block[key].items()]
        parts += ["", f"by {title}:", "", render_markdown(rows, cols)]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------- per profile
#: ``kifunet tables --by`` choices and the breakdown each prints (:class:`kifunet.eval.metrics.Breakdown`)
PROFILE_BY = {"year": "by_year", "source": "by_source", "rank": "by_rank", "time_control": "by_time_control"}
PROFILE_TITLES = {"year": "year of the game", "source": "source", "rank": "mover's rank",
                  "time_control": "time control"}
PROFILE_COLUMNS = [("group", "group"), ("count", "positions"), ("top1", "top-1 %"), ("top5", "top-5 %"),
                   ("ce", "CE (nats)")]


class MissingBreakdown(ValueError):
    """A result without the breakdown asked for (a format 1 or 2 result has no profile breakdowns)."""


def profile_rows(path: str, res: dict, by: str, mode: str = "single") -> list[dict]:
    """One row per group of ``res``'s ``by`` breakdown (a key of :data:`PROFILE_BY`), in the result's order: the
    group, its positions, top-1 and top-5 accuracy and cross-entropy. :class:`MissingBreakdown` (one line, naming
    ``path``) when the result has no such breakdown."""
    if by not in PROFILE_BY:
        raise InvalidValue(f"--by {by!r}: one of {', '.join(PROFILE_BY)}")
    block = res["results"][mode]
    part = PROFILE_BY[by]
    if part not in block:
        raise MissingBreakdown(f"{path}: no {part} breakdown (eval result format version "
                               f"{res.get('format_version', 1)}; evaluate again with this kifunet for it)")
    return [{"group": g, "count": f"{b['count']:,}", "top1": _pct(b["accuracy"]["1"]),
             "top5": _pct(b["accuracy"]["5"]), "ce": f"{b['cross_entropy_nats']:.3f}"}
            for g, b in block[part].items() if b["count"]]


def profile_title(path: str, res: dict, by: str, mode: str = "single") -> str:
    """The line above a per-profile table: whose result, which evaluation, on what data, grouped by what."""
    mask = ", legal mask" if res.get("settings", {}).get("legal_mask") else ""
    return (f"{result_label(path, res)}, {MODE_TEXT[mode]}{mask}: by {PROFILE_TITLES[by]} "
            f"({os.path.basename(path)})")


def render_profiles(results: list[tuple[str, dict]], by: str, fmt: str = "markdown") -> tuple[str, list[str]]:
    """``(text, skipped)``: a per-profile table (:func:`profile_rows`) for every result and evaluation mode it
    holds, in ``fmt`` (markdown or html), and one line for each result that lacks the breakdown."""
    if fmt not in ("markdown", "html"):
        raise InvalidValue(f"unknown format {fmt!r} (markdown or html)")
    parts, skipped = [], []
    for path, res in results:
        for mode in MODES:
            if mode not in res["results"]:
                continue
            try:
                rows = profile_rows(path, res, by, mode)
            except MissingBreakdown as e:
                skipped.append(str(e))
                break
            title = profile_title(path, res, by, mode)
            if fmt == "markdown":
                parts += ([""] if parts else []) + [f"**{_md_escape(title)}**", "",
                                                    render_markdown(rows, PROFILE_COLUMNS)]
            else:
                parts += [f"<p><strong>{html.escape(title)}</strong></p>", render_html(rows, PROFILE_COLUMNS)]
    return "\n".join(parts), skipped
