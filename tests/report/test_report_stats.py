"""``ov3d report --ci --paired A,B --mine``: the interval, tier, paired and mining tables equal the ``Analysis``
results they come from (same seed, same resamples), are written in every format their spec names, and are refused
with one line when asked for wrongly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ov3d_core.analysis import MINING_KINDS, Analysis, View
from ov3d_core.cli import main
from ov3d_core.report import CI_TABLES, MINING_TABLES, PAIRED_TABLES, TABLES
from tests.report.conftest import DATASETS, RUNS

B, SEED, TOP = 120, 3, 3


@pytest.fixture(scope="module")
def stats_report(tiny_config, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stats") / "report"
    rc = main(["report", "--config", str(tiny_config), "--out", str(out), "--splits", "20", "--subset-size", "3",
               "--seed", str(SEED), "--ci", "--resamples", str(B), "--paired", "run_in,run_out", "--correction",
               "bh", "--mine", "--mine-top", str(TOP)])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def bench(tiny_config) -> Analysis:
    return Analysis.from_yaml(tiny_config)


def _csv(out: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out / "csv" / f"{name}.csv", keep_default_na=True)


def _same(got: pd.DataFrame, want: pd.DataFrame, what: str) -> None:
    """Equal columns and values (floats to 1e-12: the CSV round trip), NaN where NaN."""
    assert list(got.columns) == list(want.columns), what
    assert len(got) == len(want), what
    for c in want.columns:
        w, g = want[c].to_numpy(), got[c].to_numpy()
        if pd.api.types.is_bool_dtype(want[c]) or not pd.api.types.is_numeric_dtype(want[c]):
            assert [str(x) for x in g] == [str(x) for x in w], (what, c)
        else:
            np.testing.assert_allclose(g.astype(float), w.astype(float), rtol=1e-12, atol=1e-12, equal_nan=True,
                                       err_msg=f"{what}: {c}")


def test_stats_tables_are_written_in_their_formats(stats_report):
    for name in CI_TABLES + PAIRED_TABLES + MINING_TABLES:
        spec = TABLES[name]
        assert (stats_report / "csv" / f"{name}.csv").stat().st_size > 0, name
        assert (stats_report / "md" / f"{name}.md").exists() == spec.markdown, name
        assert (stats_report / "tex" / f"{name}.tex").exists() == spec.latex, name
    index = (stats_report / "index.md").read_text()
    assert "csv/tiers.csv" in index and "csv/mining_cross_class.csv" in index
    readme = (stats_report / "README.md").read_text()
    assert f"--ci --paired run_in,run_out --resamples {B}" in readme and f"--mine --mine-top {TOP}" in readme
    assert "--correction bh" in readme


def test_ci_table_equals_analysis_bootstrap(stats_report, bench):
    ci, cat = _csv(stats_report, "ci"), _csv(stats_report, "ci_per_category")
    # the column names the app's parity tests match: Analysis's, keyed by run and dataset
    assert list(ci.columns) == ["run", "dataset", "metric", "value", "lo", "hi", "se", "n_valid", "level", "method"]
    seen = 0
    for run in RUNS:
        for ds in DATASETS:
            b = bench.bootstrap(View(ds, run), n_resamples=B, seed=SEED)
            got = ci[(ci["run"] == run) & (ci["dataset"] == ds)].drop(columns=["run", "dataset"])
            _same(got.reset_index(drop=True), b.to_frame(), f"ci {run}/{ds}")
            got = cat[(cat["run"] == run) & (cat["dataset"] == ds)].drop(columns=["run", "dataset"])
            _same(got.reset_index(drop=True), b.per_category_frame(), f"ci_per_category {run}/{ds}")
            seen += 1
    assert seen == len(RUNS) * len(DATASETS)
    # a different seed gives other intervals: the table depends on the seed it states
    other = bench.bootstrap(View("indoor_a", "run_in"), n_resamples=B, seed=SEED + 1).to_frame()
    first = ci[(ci["run"] == "run_in") & (ci["dataset"] == "indoor_a")]
    assert not np.allclose(first["lo"].to_numpy(), other["lo"].to_numpy(), equal_nan=True)
    summary = json.loads((stats_report / "summary.json").read_text())
    row = first.set_index("metric").loc["AP3D"]
    assert summary["runs"]["run_in"]["indoor_a"]["ci"]["AP3D"]["lo"] == pytest.approx(row["lo"], rel=1e-12)


def test_tiers_and_paired_tables_equal_analysis(stats_report, bench):
    tiers, paired, per_cat = _csv(stats_report, "tiers"), _csv(stats_report, "paired"), _csv(stats_report,
                                                                                              "paired_per_category")
    for ds in DATASETS:
        want = bench.leaderboard_tiers(View(ds), n_resamples=B, seed=SEED, correction="bh")
        got = tiers[tiers["dataset"] == ds].drop(columns=["dataset", "metric"]).reset_index(drop=True)
        _same(got, want, f"tiers {ds}")
        pc = bench.paired(View(ds, "run_in"), View(ds, "run_out"), n_resamples=B, seed=SEED, correction="bh")
        _same(paired[paired["dataset"] == ds].drop(columns="dataset").reset_index(drop=True), pc.to_frame(),
              f"paired {ds}")
        _same(per_cat[per_cat["dataset"] == ds].drop(columns="dataset").reset_index(drop=True),
              pc.per_category_frame(), f"paired_per_category {ds}")
    assert set(per_cat["correction"]) == {"bh"}


def test_mining_tables_equal_analysis_mine(stats_report, bench):
    for kind in MINING_KINDS:
        table = _csv(stats_report, f"mining_{kind.replace('-', '_')}")
        for ds in DATASETS:
            if kind in ("disagreement", "missed-by-all"):
                want = bench.mine(View(ds, "run_in"), kind).top(TOP).reset_index(drop=True)
                got = table[(table["run"] == "(all)") & (table["dataset"] == ds)]
                _same(got.drop(columns=["run", "dataset"]).reset_index(drop=True), want, f"{kind} {ds}")
                continue
            for run in RUNS:
                want = bench.mine(View(ds, run), kind).top(TOP).reset_index(drop=True)
                got = table[(table["run"] == run) & (table["dataset"] == ds)]
                assert len(got) <= TOP
                _same(got.drop(columns=["run", "dataset"]).reset_index(drop=True), want, f"{kind} {run}/{ds}")
    assert len(_csv(stats_report, "mining_cross_class")) > 0  # the tiny benchmark has mislabelled boxes


@pytest.mark.parametrize("extra, field", [
    (["--resamples", "0", "--ci"], "--resamples"),
    (["--level", "1.5", "--ci"], "--level"),
    (["--level", "nan", "--ci"], "--level"),
    (["--resamples", "50"], "--resamples"),  # without --ci / --paired
    (["--correction", "bh"], "--correction"),
    (["--mine-top", "5"], "--mine-top"),
    (["--paired", "run_in"], "--paired"),
    (["--paired", "run_in,run_in"], "--paired"),
    (["--paired", "run_in,nope"], "--paired"),
    (["--ci", "--seed", "-1"], "--seed"),
])
def test_bad_stats_arguments_exit_2_in_one_line(tiny_config, tmp_path, capsys, extra, field):
    out = tmp_path / "r"
    assert main(["report", "--config", str(tiny_config), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()
