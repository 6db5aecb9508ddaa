"""The README's first command: `kifunet quickstart` builds, trains and evaluates on the sample corpus."""

import json

import pytest

from kifunet import cli


@pytest.mark.slow
def test_quickstart_runs_build_train_eval(tmp_path, capsys):
    out = tmp_path / "qs"
    assert cli.main(["quickstart", "--out", str(out), "--minutes", "0.25", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    for stage in ("$ kifunet build", "$ kifunet train", "$ kifunet eval"):
        assert stage in printed
    manifest = json.loads((out / "data" / "manifest.json").read_text())
    assert manifest["counts"]["seen"] == manifest["counts"]["used"] >= 30
    result = json.loads(next((out / "run" / "eval").glob("*.json")).read_text())
    assert result["results"]["single"]["count"] == manifest["splits"]["test"]["positions"] > 0
