"""``ov3d evaluate --ci`` and ``ov3d compare``: the intervals are ``Analysis.bootstrap``'s for the same seed, the
paired differences are differences of ``evaluate``'s numbers, the tiers are ``Analysis.leaderboard_tiers``, and bad
arguments exit 2 with one line before any work."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ov3d_core.analysis import Analysis, View
from ov3d_core.cli import main
from tests.report.conftest import DATASETS, RUNS, build_tiny_benchmark

B = 120


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return build_tiny_benchmark(tmp_path_factory.mktemp("stats_cli"))


@pytest.fixture(scope="module")
def bench(config) -> Analysis:
    return Analysis.from_yaml(config)


def _run(args, tmp_path, name="out.json") -> dict:
    out = tmp_path / name
    assert main([*args, "--json", str(out)]) == 0
    return json.loads(out.read_text())


def _check_ci_block(block: dict, frame, key: str, seed: int) -> None:
    assert list(block) == [str(k) for k in frame[key]]
    for r in frame.to_dict(orient="records"):
        c = block[str(r[key])]
        for f in ("value", "lo", "hi", "se"):
            if np.isnan(r[f]):
                assert c[f] is None, (r[key], f)
            else:
                assert c[f] == pytest.approx(r[f], rel=1e-12, abs=1e-12), (r[key], f)
        assert (c["n_valid"], c["level"], c["method"]) == (r["n_valid"], r["level"], r["method"])
        assert (c["n_resamples"], c["seed"]) == (B, seed)


@pytest.mark.parametrize("extra, level, method, seed", [([], 0.95, "bca", 0),
                                                         (["--level", "0.8", "--ci-method", "percentile",
                                                           "--seed", "5"], 0.8, "percentile", 5)])
def test_evaluate_ci_equals_analysis_bootstrap(config, bench, tmp_path, capsys, extra, level, method, seed):
    res = _run(["evaluate", "--benchmark", str(config), "--ci", "--resamples", str(B), *extra], tmp_path)
    assert res["bootstrap"] == {"unit": "image", "n_resamples": B, "level": level, "method": method, "seed": seed}
    for run in RUNS:
        for ds in DATASETS:
            b = bench.bootstrap(View(ds, run), n_resamples=B, seed=seed, level=level, method=method)
            block = res["runs"][run][ds]
            _check_ci_block(block["ci"], b.to_frame(), "metric", seed)
            _check_ci_block(block["ci_per_category"], b.per_category_frame(), "category", seed)
            assert block["ci"]["AP3D"]["value"] == pytest.approx(block["AP3D"], rel=1e-12)
    out = capsys.readouterr().out
    lo, hi = res["runs"]["run_in"]["indoor_a"]["ci"]["AP3D"]["lo"], res["runs"]["run_in"]["indoor_a"]["ci"]["AP3D"]["hi"]
    assert f"{100 * level:g}% intervals ({method}, {B} image resamples, seed {seed})" in out
    assert f"[{lo:.2f}, {hi:.2f}]" in out
    rec = res["runs"]["run_in"]["indoor_a"]["ci"]["recall3D@15"]  # a fraction in the JSON and in the table (issue 25)
    assert f"[{rec['lo']:.3f}, {rec['hi']:.3f}]" in out


def test_evaluate_without_ci_has_no_intervals(config, tmp_path):
    res = _run(["evaluate", "--benchmark", str(config)], tmp_path)
    assert "bootstrap" not in res and "ci" not in res["runs"]["run_in"]["indoor_a"]


def test_compare_two_runs_diff_is_the_difference_of_evaluate(config, bench, tmp_path, capsys):
    ev = _run(["evaluate", "--benchmark", str(config)], tmp_path, "ev.json")["runs"]
    res = _run(["compare", "--benchmark", str(config), "--runs", "run_in,run_out", "--resamples", str(B)], tmp_path)
    assert [c["dataset"] for c in res["comparisons"]] == list(DATASETS)
    for c in res["comparisons"]:
        ds = c["dataset"]
        a, b = ev["run_in"][ds], ev["run_out"][ds]
        want = bench.paired(View(ds, "run_in"), View(ds, "run_out"), n_resamples=B, seed=0).to_frame()
        for r in want.to_dict(orient="records"):
            h = c["headline"][r["metric"]]
            if a[r["metric"]] is None:
                assert h["diff"] is None and h["p_value"] is None
                continue
            assert h["a"] == pytest.approx(a[r["metric"]], rel=1e-12)
            assert h["diff"] == pytest.approx(a[r["metric"]] - b[r["metric"]], abs=1e-9)
            assert (h["lo"], h["hi"], h["p_value"], h["significant"]) == pytest.approx(
                (r["lo"], r["hi"], r["p_value"], r["significant"]), rel=1e-12)
        for cat, p in c["per_category"].items():
            ca, cb = a["per_category"][cat]["AP3D"], b["per_category"][cat]["AP3D"]
            if ca is not None and cb is not None:
                assert p["diff"] == pytest.approx(ca - cb, abs=1e-9), cat
    out = capsys.readouterr().out
    assert "run_in - run_out (dataset-level) on indoor_a" in out
    assert "per category: p-values Holm-corrected (family-wise error) over" in out


def test_compare_one_run_under_two_protocols(config, tmp_path, capsys):
    dl = _run(["evaluate", "--benchmark", str(config)], tmp_path, "dl.json")["runs"]["run_out"]["indoor_a"]
    ta = _run(["evaluate", "--benchmark", str(config), "--protocol", "target-aware"], tmp_path,
              "ta.json")["runs"]["run_out"]["indoor_a"]
    res = _run(["compare", "--benchmark", str(config), "--runs", "run_out", "--protocols",
                "target-aware,dataset-level", "--dataset", "indoor_a", "--resamples", str(B)], tmp_path)
    (c,) = res["comparisons"]
    assert (c["a"], c["b"]) == ("target-aware", "dataset-level")
    assert c["view_a"]["protocol"] == "target-aware" and c["view_b"]["run"] == "run_out"
    for k in ("AP3D", "AP3D@25", "recall3D@15"):
        assert c["headline"][k]["diff"] == pytest.approx(ta[k] - dl[k], abs=1e-9), k
    assert ta["AP3D"] != dl["AP3D"]  # the oracle changes something here, so the test can tell the sides apart
    assert "run_out under target-aware - dataset-level on indoor_a" in capsys.readouterr().out


def test_compare_correction_is_applied_and_stated(config, bench, tmp_path, capsys):
    res = _run(["compare", "--benchmark", str(config), "--dataset", "outdoor_b", "--correction", "bh",
                "--resamples", str(B), "--seed", "2"], tmp_path)  # exactly two runs: compared by default
    (c,) = res["comparisons"]
    assert c["correction"] == "bh" and res["bootstrap"]["correction"] == "bh"
    want = bench.paired(View("outdoor_b", "run_in"), View("outdoor_b", "run_out"), n_resamples=B, seed=2,
                        correction="bh").per_category_frame()
    got = [c["per_category"][k]["p_adjusted"] for k in want["category"]]
    np.testing.assert_allclose(got, want["p_adjusted"].to_numpy(), rtol=1e-12)
    holm = bench.paired(View("outdoor_b", "run_in"), View("outdoor_b", "run_out"), n_resamples=B, seed=2,
                        correction="holm").per_category_frame()["p_adjusted"].to_numpy()
    assert not np.allclose(got, holm)  # the option changes the numbers, not only the label
    assert "Benjamini-Hochberg-corrected (false discovery rate)" in capsys.readouterr().out


def test_compare_tiers_equal_leaderboard_tiers(config, bench, tmp_path, capsys):
    res = _run(["compare", "--benchmark", str(config), "--tiers", "--resamples", str(B), "--metric", "AP3D@25"],
               tmp_path)
    assert res["comparisons"] == []  # --tiers alone: no pair
    for ds in DATASETS:
        want = bench.leaderboard_tiers(View(ds), metric="AP3D@25", n_resamples=B, seed=0)
        got = res["tiers"][ds]
        assert [r["run"] for r in got] == list(want["run"])
        assert [r["tier"] for r in got] == list(want["tier"])
        np.testing.assert_allclose([r["value"] for r in got], want["value"].to_numpy(), rtol=1e-12)
        np.testing.assert_allclose([np.nan if r["p_adjusted"] is None else r["p_adjusted"] for r in got],
                                   want["p_adjusted"].to_numpy(), rtol=1e-12, equal_nan=True)
    assert "AP3D@25 tiers on indoor_c" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------------ refusals
def _gt_pred(config):
    root = config.parent
    return ["--gt", str(root / "indoor_a.json"), "--pred", str(root / "run_in_indoor_a.json")]


@pytest.mark.parametrize("extra, field", [
    (["--ci", "--resamples", "0"], "--resamples"),
    (["--ci", "--level", "1.5"], "--level"),
    (["--ci", "--level", "nan"], "--level"),
    (["--ci", "--level", "0"], "--level"),
    (["--ci", "--seed", "-1"], "--seed"),
    (["--resamples", "100"], "--resamples"),  # without --ci
    (["--ci-method", "percentile"], "--ci-method"),
])
def test_evaluate_bad_ci_arguments_exit_2_before_any_work(config, tmp_path, capsys, extra, field):
    cache = tmp_path / "cache"
    assert main(["evaluate", *_gt_pred(config), "--cache-dir", str(cache), *extra]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not cache.exists()


@pytest.mark.parametrize("extra, field", [
    (["--runs", "run_in"], "--runs"),
    (["--runs", "run_in,run_in"], "--runs"),
    (["--runs", "run_in,nope"], "--runs"),
    (["--runs", "run_in,run_out,run_in"], "--runs"),
    (["--protocols", "dataset-level"], "--protocols"),
    (["--protocols", "dataset-level,dataset-level"], "--protocols"),
    (["--protocols", "dataset-level,nope"], "--protocols"),
    (["--protocols", "dataset-level,target-aware", "--runs", "run_in,run_out"], "--runs"),
    (["--protocols", "dataset-level,target-aware", "--protocol", "target-aware"], "--protocol"),
    (["--protocols", "dataset-level,target-aware"], "--runs"),  # two runs: which one?
    (["--dataset", "nope"], "--dataset"),
    (["--resamples", "0"], "--resamples"),
    (["--level", "1.5"], "--level"),
])
def test_compare_bad_arguments_exit_2_in_one_line(config, capsys, extra, field):
    assert main(["compare", "--benchmark", str(config), *extra]) == 2
    err = capsys.readouterr().err
    assert field in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_compare_one_prediction_file_needs_protocols(config, tmp_path, capsys):
    assert main(["compare", *_gt_pred(config), "--cache-dir", str(tmp_path / "c")]) == 2
    assert "--runs" in capsys.readouterr().err
    res = _run(["compare", *_gt_pred(config), "--cache-dir", str(tmp_path / "c"), "--protocols",
                "dataset-level,target-aware", "--resamples", "50"], tmp_path)
    assert len(res["comparisons"]) == 1


def test_a_number_without_interval_is_named_in_a_note():
    from ov3d_core.commands.evaluate import undefined_interval_notes

    block = {"ci": {"AP3D": {"value": 12.5, "lo": None, "hi": None}, "AP3D@15": {"value": 20.0, "lo": 15.0,
                                                                                 "hi": 25.0},
                    "AP3D-F": {"value": None, "lo": None, "hi": None}},  # no value: nothing to bound
             "ci_per_category": {"chair": {"value": 50.0, "lo": 40.0, "hi": None}}}
    (note,) = undefined_interval_notes("run r on d", block, "bca")
    assert "run r on d: no interval for 2 number(s) (AP3D, chair)" in note and "percentile" in note
    assert undefined_interval_notes("x", {"ci": {"AP3D": {"value": 1.0, "lo": 0.5, "hi": 2.0}}}, "bca") == []


def test_a_run_that_fails_to_load_is_left_out_of_the_tiers_and_refused_in_a_pair(tmp_path, capsys):
    cfg = build_tiny_benchmark(tmp_path / "b")
    (tmp_path / "b" / "run_out_indoor_a.json").write_text("{not json")
    res = _run(["compare", "--benchmark", str(cfg), "--tiers", "--dataset", "indoor_a", "--resamples", "50"],
               tmp_path)
    assert [r["run"] for r in res["tiers"]["indoor_a"]] == ["run_in"]
    assert "note: run run_out on indoor_a is left out of the tiers" in capsys.readouterr().err
    assert main(["compare", "--benchmark", str(cfg), "--dataset", "indoor_a", "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert "run_out_indoor_a.json" in err and len(err.strip().splitlines()) == 1
