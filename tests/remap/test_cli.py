"""``embed`` and ``remap`` commands end to end on a tiny hand-written benchmark (Omni3D GT, Cube R-CNN JSON, crops
file with captions, real PNG images): a closed-vocabulary detector that calls everything "car" is remapped onto the
dataset vocabulary."""

import json
import re

import numpy as np
import pytest
import yaml
from PIL import Image

from ov3d_core.cli import main
from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID

K = np.array([[100.0, 0, 80], [0, 100.0, 60], [0, 0, 1]])
W, H = 160, 120
VOCAB = ["car", "truck", "pedestrian", "traffic cone"]
OBJECTS = [("car", [-2.0, 0.5, 10.0], [1.8, 1.5, 4.2], "a grey sedan car parked at the kerb"),
           ("truck", [2.5, 0.0, 14.0], [2.5, 3.0, 8.0], "a large white box truck"),
           ("pedestrian", [0.3, 0.6, 7.0], [0.6, 1.7, 0.5], "a person walking, a pedestrian")]


def _box(center, dims, yaw=0.0):
    R = rotation_y([yaw])[0]
    corners = corners_from_pose(np.array([center]), np.array([dims]), R[None])
    proj, trunc = projected_box2d(corners, K, W, H)
    return R, corners[0], proj[0], trunc[0]


def build(root):
    rng = np.random.default_rng(0)
    images, anns, preds, crops = [], [], [], []
    aid = 1
    for i in range(3):
        image_id = 10 + i
        (root / "img").mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (H, W, 3), dtype=np.uint8)).save(root / "img" / f"{image_id}.png")
        images.append({"id": image_id, "dataset_id": 0, "width": W, "height": H, "file_path": f"img/{image_id}.png",
                       "K": K.tolist()})
        for cat, center, dims, caption in OBJECTS:
            R, corners, proj, trunc = _box(center, dims)
            anns.append({"id": aid, "image_id": image_id, "dataset_id": 0, "category_id": OMNI3D_NAME_TO_ID[cat],
                         "category_name": cat, "valid3D": True, "bbox2D_tight": [-1.0] * 4,
                         "bbox2D_proj": proj.tolist(), "bbox2D_trunc": trunc.tolist(), "bbox3D_cam": corners.tolist(),
                         "center_cam": center, "dimensions": dims, "R_cam": R.tolist(), "behind_camera": False,
                         "visibility": 1.0, "truncation": 0.0, "segmentation_pts": -1, "lidar_pts": -1,
                         "depth_error": -1})
            aid += 1
            crops.append({"record": len(preds), "image_id": image_id, "crop_box": trunc.tolist(), "overlaps": [],
                          "caption": caption})
            x1, y1, x2, y2 = proj.tolist()
            preds.append({"image_id": image_id, "category_id": OMNI3D_NAME_TO_ID["car"], "category_name": "car",
                          "bbox": [x1, y1, x2 - x1, y2 - y1], "score": 0.9 - 0.1 * len(preds) / 9, "depth": center[2],
                          "bbox3D": corners.tolist(), "center_cam": center, "dimensions": dims, "pose": R.tolist()})
    gt = {"info": {"id": 0, "name": "Toy", "source": "Toy", "split": "test", "version": "0", "url": ""},
          "images": images, "annotations": anns,
          "categories": [{"id": OMNI3D_NAME_TO_ID[c], "name": c, "supercategory": ""} for c in VOCAB]}
    (root / "gt.json").write_text(json.dumps(gt))
    (root / "preds.json").write_text(json.dumps(preds))
    (root / "crops.json").write_text(json.dumps(crops))
    cfg = {"name": "toy", "cache_dir": "cache",
           "datasets": [{"name": "Toy", "gt": "gt.json", "images": ".", "environment": "outdoor",
                         "categories": VOCAB}],
           "runs": [{"name": "closed", "dataset": "Toy", "predictions": "preds.json", "format": "cubercnn-json",
                     "closed_vocabulary": ["car"], "crops": "crops.json"}]}
    path = root / "benchmark.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def bench(tmp_path):
    return build(tmp_path)


def _map(out: str) -> float:
    return float(re.search(r"mAP_3D:\s+([-\d.]+|nan)", out).group(1))


def test_embed_then_remap_with_the_proxy(bench, tmp_path, capsys):
    from ov3d_core.benchmark import Benchmark
    from ov3d_core.io.predictions import load_predictions

    common = ["--benchmark", str(bench), "--dataset", "Toy", "--run", "closed", "--encoder", "proxy", "--no-progress"]
    assert main(["embed", *common]) == 0
    out = capsys.readouterr().out
    assert "9 predictions, 9 crops embedded" in out and "stand-in" in out
    assert list((tmp_path / "cache" / "embeddings").rglob("embeddings.npy"))

    from ov3d_core.analysis import Analysis, View

    original = Analysis.from_yaml(bench).summary(View("Toy", "closed"))["AP3D"]
    dest = tmp_path / "out" / "remapped.json"
    assert main(["remap", *common, "--template", "S1", "--theta", "0.3", "--score-mode", "product",
                 "--out", str(dest)]) == 0
    out = capsys.readouterr().out
    assert "kept:      9 of 9" in out and "cosine" in out
    remapped = _map(out)
    assert remapped > original + 20  # truck and pedestrian boxes got their classes back
    ds = Benchmark.from_yaml(bench).dataset("Toy")
    back = load_predictions(dest, ds)
    assert back.pred.category.tolist() == ["car", "truck", "pedestrian"] * 3
    # a group ensemble, and a threshold that discards everything
    assert main(["remap", *common, "--template", "standard", "--theta", "0.99", "--out", str(dest)]) == 0
    out = capsys.readouterr().out
    assert "kept:      0 of 9" in out and "ensemble of 5" in out
    assert json.loads(dest.read_text()) == []


def test_remap_with_a_tiny_siglip2_on_pixels(bench, tmp_path, tiny_dirs, capsys):
    dest = tmp_path / "r.json"
    code = main(["remap", "--benchmark", str(bench), "--dataset", "Toy", "--run", "closed", "--encoder",
                 f"hf:{tiny_dirs['siglip2']}", "--device", "cpu", "--template", "a photo of a {} on the road.",
                 "--theta", "0.0", "--out", str(dest), "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "siglip2, sigmoid" in out and "probability" in out and "kept:      9 of 9" in out
    assert len(json.loads(dest.read_text())) == 9


def test_bad_template_is_an_input_error(bench, tmp_path, capsys):
    code = main(["remap", "--benchmark", str(bench), "--dataset", "Toy", "--run", "closed", "--encoder", "proxy",
                 "--template", "nonsense", "--out", str(tmp_path / "x.json"), "--no-progress"])
    assert code == 2
    assert "template" in capsys.readouterr().err
