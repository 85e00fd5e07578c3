"""The app says what the CLI says about predictions outside the evaluated vocabulary (issue 11): counted per run in
the leaderboard, never dropped without a word; the column is left out when no run has any."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.io.factories import (
    make_annotation,
    make_gt_json,
    make_image,
    make_pred_from_annotation,
    make_pred_json,
)

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _config(tmp_path: Path, with_oov: bool) -> Path:
    anns = [make_annotation(1, 1, category="chair", center=(0.0, 0.3, 4.0), dims=(0.6, 0.9, 0.6)),
            make_annotation(2, 2, category="table", center=(1.5, 0.3, 6.0), dims=(1.0, 0.7, 1.6))]
    make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns)
    clean = [make_pred_from_annotation(a, score=0.9) for a in anns]
    make_pred_json(tmp_path, clean, name="clean.json")
    # two trucks and a lamp: Omni3D names, not in this GT's vocabulary (chair, table)
    extra = [make_pred_from_annotation(anns[0], score=0.5, category_id=5),
             make_pred_from_annotation(anns[1], score=0.4, category_id=5),
             make_pred_from_annotation(anns[1], score=0.3, category_id=None, category_name="lamp")]
    make_pred_json(tmp_path, clean + (extra if with_oov else []), name="other.json")
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("datasets:\n  - name: mini\n    gt: gt.json\nruns:\n"
                   "  - {name: clean, dataset: mini, predictions: clean.json}\n"
                   "  - {name: other, dataset: mini, predictions: other.json}\n"
                   f"cache_dir: {tmp_path / 'cache'}\n")
    return cfg


def _board(cfg: Path):
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["src"] = "config"
    at.query_params["cfg"] = str(cfg)
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    return at.dataframe[0].value.set_index("run")


def test_leaderboard_counts_predictions_outside_the_vocabulary(app_roots, tmp_path):
    board = _board(_config(tmp_path, with_oov=True))
    assert board.loc["other", "n_out_of_vocabulary"] == 3 and board.loc["clean", "n_out_of_vocabulary"] == 0
    assert board.loc["other", "AP3D"] == board.loc["clean", "AP3D"]  # not scored: the chair/table AP is unchanged


def test_the_column_is_left_out_when_every_prediction_is_in_the_vocabulary(app_roots, tmp_path):
    board = _board(_config(tmp_path, with_oov=False))
    assert "n_out_of_vocabulary" not in board.columns and set(board.index) == {"clean", "other"}
