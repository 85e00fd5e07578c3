"""``Analysis.pooled`` over one dataset takes its numbers from the dataset's score instead of evaluating the same
detections a second time: the pooled block of ``ov3d evaluate`` must be the one the pooled evaluator
(``eval.scoring.score_pooled``) computes over that one dataset."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ov3d_core.analysis import Analysis, View
from ov3d_core.cli import main
from ov3d_core.analysis.tables import POOLED_SUBSETS, subset_means
from ov3d_core.commands.evaluate import _block
from ov3d_core.eval.scoring import score_pooled
from ov3d_core.taxonomy import SUBSET_PRESETS
from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation, make_pred_json


@pytest.mark.parametrize("protocol", ["dataset-level", "target-aware"])
def test_pooled_block_of_one_dataset_is_analysis_pooled(tmp_path, protocol):
    rng = np.random.default_rng(2)
    cats = ("chair", "table", "bed", "sofa")
    anns, preds = [], []
    for i in range(1, 31):
        for k in range(int(rng.integers(1, 6))):
            a = make_annotation(len(anns) + 1, i, category=cats[int(rng.integers(0, 4))],
                                center=(rng.uniform(-3, 3), 0.3, rng.uniform(2, 40)), dims=(0.8, 0.9, 0.8),
                                yaw=float(rng.uniform(-3, 3)))
            anns.append(a)
            for _ in range(int(rng.integers(0, 4))):
                jitter = rng.normal(0, 0.15, 3)
                preds.append(make_pred_from_annotation(a, score=float(rng.random()),
                                                       center_cam=(np.asarray(a["center_cam"]) + jitter).tolist()))
    gt = make_gt_json(tmp_path, images=[make_image(i) for i in range(1, 31)], annotations=anns)
    pred = make_pred_json(tmp_path, preds)
    out = tmp_path / "out.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--protocol", protocol, "--json", str(out),
                 "--cache-dir", str(tmp_path / "c")]) == 0
    got = json.loads(out.read_text())["pooled"]

    a = Analysis.from_files([gt], [pred], cache_dir=tmp_path / "c2")
    c = a.context(View(dataset=a.datasets[0], run=a.runs()[0], protocol=protocol))
    p = score_pooled([(c.dataset, c.run, c.pairs, a.score(c.view).view)])  # the pooled evaluator itself
    vocab = tuple(p["per_category"]["category"])
    want = _block(p["summary"], p["per_category"], None,
                  subset_means(p["ap"], vocab, {k: SUBSET_PRESETS[k] for k in POOLED_SUBSETS}))
    want = json.loads(json.dumps(want))
    assert got == want
    assert 0 < got["AP3D"] < 100  # a real mix of matches and misses
