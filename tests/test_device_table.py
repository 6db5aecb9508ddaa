"""benchmarks/device/table.py: the README's GPU table is the committed device.json, rendered; its figures agree
with the JSON's own arithmetic (MFU = achieved TFLOP/s / the peak measured in the same run)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks" / "device"))

import table  # noqa: E402

KEPT = REPO / "benchmarks" / "results" / "device" / "device.json"
SOURCE = "benchmarks/results/device/device.json"


@pytest.fixture(scope="module")
def result() -> dict:
    return json.loads(KEPT.read_text())


def _rows(text: str) -> list[list[str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def test_readme_table_is_the_committed_json_rendered(result):
    readme = (REPO / "README.md").read_text()
    assert "## Speed" in readme
    assert table.between(readme) == table.render(result, SOURCE), \
        "README's GPU table is stale: python benchmarks/device/table.py " + SOURCE + " --into README.md"


def test_table_figures_agree_with_the_json(result):
    rows = _rows(table.render(result, SOURCE))
    measured = result["train_step"]["rows"]
    assert len(rows) == len(measured) >= 1
    peak = result["peak"]["bf16_tflops"]
    for cells, r in zip(rows, measured):
        config, model, params, dtype, batch, pos, tflops, mfu, mfu_sheet, compile_s = cells
        assert config == f"`{r['config']}`" and model == f"`{r['model']}`" and dtype == r["dtype"]
        assert int(params.replace(",", "")) == r["params"] and int(batch.replace(",", "")) == r["batch"]
        assert abs(int(pos.replace(",", "")) - r["positions_per_s"]) <= 0.5
        # achieved = positions/s x analytical FLOPs per position; MFU = achieved / the peak of the same run
        assert abs(r["positions_per_s"] * r["train_flops_per_position"] / 1e12 - r["achieved_tflops"]) < 1e-6 * peak
        assert abs(float(tflops) - r["achieved_tflops"]) <= 0.5
        assert abs(float(mfu.rstrip("%")) - 100 * r["achieved_tflops"] / peak) <= 0.05
        assert abs(float(mfu_sheet.rstrip("%")) - 100 * r["achieved_tflops"]
                   / result["peak"]["datasheet"]["bf16_tflops"]) <= 0.05
        assert abs(float(compile_s) - r["compile_s"]) <= 0.05
    head = table.render(result, SOURCE).splitlines()[0]
    assert result["jax"]["device_kind"] in head and f"JAX {result['jax']['jax']}" in head and table.COMMAND in head


def test_a_changed_figure_changes_the_table_and_left_out_configs_are_named(result):
    r2 = copy.deepcopy(result)
    r2["train_step"]["rows"][0]["positions_per_s"] += 1000
    assert table.render(r2, SOURCE) != table.render(result, SOURCE)
    r2["train_step"]["not_run"] = [{"config": "newnet", "dtype": "bfloat16", "batch": 256, "why": "time budget"},
                                   {"config": r2["train_step"]["rows"][0]["config"], "batch": 4096, "why": "x"}]
    last = table.render(r2, SOURCE).splitlines()[-1]
    assert last == "Not measured in this run (its time budget ran out): `newnet`."


def test_several_runs_give_a_block_each_and_a_config_measured_by_either_is_not_left_out(tmp_path, result):
    """A later run of the configs the first one left out: one block per run, in order; the first block no longer
    names them as not measured. One run's text is :func:`table.render`'s."""
    later = copy.deepcopy(result)
    row = dict(later["train_step"]["rows"][0], config="agz20", model="agz_resnet20")
    later["train_step"] = {"rows": [row], "failed": [], "not_run": []}
    later["started"] = "2026-12-01T10:00:00+00:00"
    first_left = table.render(result, SOURCE).splitlines()[-1]
    assert "`agz20`" in first_left
    both = table.render_runs([(result, SOURCE), (later, "later.json")])
    assert both == (table.render(result, SOURCE, frozenset({"agz20"})) + "\n\n" + table.render(later, "later.json"))
    assert both.count("| config | model |") == 2 and both.index("`later.json`") > both.index(f"`{SOURCE}`")
    assert "`agz20`" not in table.render(result, SOURCE, frozenset({"agz20"})).splitlines()[-1]
    assert table.render_runs([(result, SOURCE)]) == table.render(result, SOURCE)
    for i, r in enumerate((result, later)):
        (tmp_path / f"{i}.json").write_text(json.dumps(r))
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "device" / "table.py"), str(tmp_path / "0.json"),
                        str(tmp_path / "1.json")], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0 and p.stdout.count("| config | model |") == 2, p.stderr


def test_into_replaces_only_between_the_markers(tmp_path, result):
    page = f"# t\n\nbefore\n{table.START}\nold\n{table.END}\nafter\n"
    new = table.replace_between(page, "NEW")
    assert new == f"# t\n\nbefore\n{table.START}\nNEW\n{table.END}\nafter\n"
    assert table.replace_between(new, "NEW") == new
    with pytest.raises(SystemExit, match="gpu-table:start"):
        table.replace_between("# no markers\n", "NEW")


def test_cli_names_a_bad_file_in_one_line(tmp_path):
    bad = tmp_path / "device.json"
    bad.write_text('{"schema": 1}')
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / "device" / "table.py"), str(bad)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and str(bad) in p.stderr


COMPILE = REPO / "benchmarks" / "results" / "aot" / "compile.json"
COMPILE_SOURCE = "benchmarks/results/aot/compile.json"


def test_the_accelerators_page_compares_every_measured_step_with_its_roofline(result):
    """docs/accelerators.md's comparison is the committed JSON files rendered: one line per bf16 step measured on
    the GPU, its MFU the table's, beside the compile table's roofline MFU and ops of that config at batch 256 on
    v5e-8, v5p-8 and v6e-8 (and its CPU ops); a step with an op count shows it."""
    compile_rows = json.loads(COMPILE.read_text())["rows"]
    text = table.render_compare([(result, SOURCE)], compile_rows, COMPILE_SOURCE)
    page = (REPO / "docs" / "accelerators.md").read_text()
    assert table.between(page, table.COMPARE_BLOCK) == text, (
        "docs/accelerators.md's comparison is stale: python benchmarks/device/table.py " + SOURCE
        + " --compare " + COMPILE_SOURCE + " --into docs/accelerators.md")
    bf16 = [r for r in result["train_step"]["rows"] if r["dtype"] == "bfloat16"]
    rows = _rows(text)
    assert len(rows) == len(bf16) >= 5
    cell = {(r["config"], r["target"]): r for r in compile_rows if r["batch"] == 256}
    for cells, r in zip(rows, bf16):
        config, gpu, batch, mfu, ops, v5e, v5p, v6e, tpu_ops, cpu_ops = cells
        assert config == f"`{r['config']}`" and gpu == result["jax"]["device_kind"] and ops == "-"
        assert int(batch.replace(",", "")) == r["batch"] and abs(float(mfu.rstrip("%")) - 100 * r["mfu"]) <= 0.05
        for got, target in ((v5e, "v5e-8"), (v5p, "v5p-8"), (v6e, "v6e-8")):
            c = cell[(r["config"], target)]
            assert got == f"{100 * c['predicted_mfu']:.1f}% ({c['bound']})", (config, target)
        assert int(tpu_ops.replace(",", "")) == cell[(r["config"], "v5e-8")]["ops"]
        assert int(cpu_ops.replace(",", "")) == cell[(r["config"], "cpu")]["ops"]
    counted = copy.deepcopy(result)
    counted["train_step"]["rows"][0]["ops"] = 1234
    assert _rows(table.render_compare([(counted, SOURCE)], compile_rows, COMPILE_SOURCE))[0][4] == "1,234"


def test_cli_compare_writes_its_block_and_names_a_bad_compile_table(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"# p\n\n{table.START}\nspeed\n{table.END}\n\n<!-- gpu-vs-roofline:start -->\nold\n"
                    "<!-- gpu-vs-roofline:end -->\n")
    script = str(REPO / "benchmarks" / "device" / "table.py")
    p = subprocess.run([sys.executable, script, str(KEPT), "--compare", str(COMPILE), "--into", str(page)],
                       capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    text = page.read_text()
    assert f"{table.START}\nspeed\n{table.END}" in text and "| `gonn5` |" in table.between(text, table.COMPARE_BLOCK)
    bad = tmp_path / "compile.json"
    bad.write_text("[]")
    p = subprocess.run([sys.executable, script, str(KEPT), "--compare", str(bad)], capture_output=True, text=True,
                       cwd=REPO)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and str(bad) in p.stderr
