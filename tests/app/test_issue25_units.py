"""Issue 25, item 6: one unit and one sign per quantity on every surface (README: AP-like numbers in percent 0-100;
recall, shares, fractions and ratios as fractions 0-1).

- ``recall3D@15``: the CLI table printed it in percent ("46.70") beside a fraction in its own JSON; now the same
  fraction on the CLI table, its JSON, the report's leaderboard and the app's Overview.
- Prompt sensitivity: the prompt lab showed "Standard → overdetailed −0.18" where the report's
  ``drop_standard_to_overdetailed`` was +0.175. A *drop* is positive when AP falls (mean mAP3D of the standard
  templates − mean of the overdetailed ones), on both; the CV (a ratio) is a fraction on both."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ov3d_core.analysis import Analysis
from tests.app.test_pages import app, metric, problems

DS = "demo_indoor"


@pytest.fixture(scope="module")
def core(tiny_demo):
    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


def _cli_row(out: str, run: str) -> dict[str, str]:
    """The numbers of the CLI table of ``run`` on DS: header names -> printed text."""
    lines = out.splitlines()
    i = lines.index(f"{run} on {DS} (dataset-level)")
    return dict(zip(lines[i + 1].split(), lines[i + 2].split()))


def test_recall_is_the_same_fraction_on_cli_json_report_and_app(tiny_demo, core, tmp_path, capsys):
    from ov3d_core.cli import main
    from ov3d_core.report import ReportOptions, leaderboard_table

    run = core.runs(DS)[0]
    assert main(["evaluate", "--benchmark", str(tiny_demo / "benchmark.yaml"), "--json", str(tmp_path / "ev.json"),
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    blob = json.loads((tmp_path / "ev.json").read_text())["runs"][run][DS]
    value = blob["recall3D@15"]
    assert 0.0 < value < 1.0  # a value that tells a fraction from a percentage
    cli = _cli_row(out, run)
    assert cli["recall3D@15"] == f"{value:.3f}"  # was f"{100 * value:.2f}"
    assert cli["AP3D"] == f"{blob['AP3D']:.2f}"  # AP stays in percent

    lb = leaderboard_table(core, [ReportOptions().view(DS, run)]).iloc[0]
    assert lb["recall3D@15"] == pytest.approx(value, abs=1e-12)
    assert lb["AP3D"] == pytest.approx(blob["AP3D"], abs=1e-9)

    at = app(None, ds=DS, run=run)
    assert not problems(at), problems(at)
    assert metric(at, "Class-agnostic recall@15") == f"{value:.3f}"
    assert metric(at, "mAP3D") == f"{blob['AP3D']:.2f}"


def test_the_prompt_drop_has_one_sign_in_report_and_app(tiny_demo, core):
    from ov3d_core.report import ReportOptions, prompt_tables

    at = app("app_pages/prompt_lab.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.session_state["focus_run"]
    opts = ReportOptions(encoder="proxy")
    row = prompt_tables(core, [opts.view(DS, run)], opts)["prompt_sensitivity"].iloc[0]
    drop = float(row["drop_standard_to_overdetailed"])
    assert np.isfinite(drop) and abs(drop) >= 0.005  # a sign to get right
    assert drop == pytest.approx(row["mean_standard"] - row["mean_overdetailed"])  # positive: overdetailed worse
    shown = {m.label: m.value for m in at.metric}
    label = next(k for k in shown if "overdetailed" in k)
    assert shown[label] == f"{drop:+.2f}"  # was f"{-drop:+.2f}"
    assert label.lower().startswith("drop")  # named so that its sign reads one way
    assert shown["CV (σ/μ)"] == f"{row['cv']:.3f}"
    assert shown["Mean mAP3D over templates"] == f"{row['mean']:.2f}"
