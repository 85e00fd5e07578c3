"""What the browser itself spends on the 3D view (run by hand: ``python bench/bench_gl3d.py``).

The Scene inspector's 3D toggle is a Streamlit rerun (~0.3 s of server CPU, ``bench/bench_app.py --views``) plus
plotly.js drawing a WebGL scene. This script times the second part alone: ``Plotly.newPlot`` of the figure
``ov3d_core.viz.scene3d.scene_figure`` builds (synthetic RGB cloud of N points, 3 box layers of 10 boxes, the camera
frustum) in a bare page of headless Debian Chromium, then ``Plotly.react`` with the same figure (what a rerun that
re-sends the figure costs), each until two animation frames later. Chromium here has no GPU: WebGL runs in
SwiftShader (software), so these are upper bounds for a browser on a machine with a GPU.

Prints a markdown table; append it to bench/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_DRAW = """async (spec) => {
    const g = document.getElementById('g');
    Plotly.purge(g);
    const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    const t0 = performance.now();
    await Plotly.newPlot(g, spec.data, spec.layout);
    await frames();
    const t1 = performance.now();
    await Plotly.react(g, spec.data, spec.layout);
    await frames();
    return [t1 - t0, performance.now() - t1];
}"""


def figure(n_points: int, seed: int = 0, show_labels: bool = True):
    import plotly.io as pio

    from ov3d_core.geometry.boxes import corners_from_pose, rotation_y
    from ov3d_core.viz.image_overlay import BoxLayer
    from ov3d_core.viz.scene3d import scene_figure

    rng = np.random.default_rng(seed)
    pts = rng.normal(size=(max(n_points, 1), 3)) * [3.0, 1.0, 4.0] + [0.0, 1.0, 8.0]
    layers = []
    for k, color in enumerate(("#2ca02c", "#1f77b4", "#d62728")):
        centers = rng.normal(size=(10, 3)) * [2.0, 0.3, 2.0] + [0.0, 1.0, 8.0]
        corners = corners_from_pose(centers, np.ones((10, 3)), rotation_y(rng.uniform(-3, 3, 10)))
        layers.append(BoxLayer(name=f"layer {k}", corners=corners, color=color,
                               labels=[f"box {i}" for i in range(10)]))
    fig = scene_figure(pts if n_points else None, layers, K=np.array([[500.0, 0, 320], [0, 500, 240], [0, 0, 1]]),
                       width=640, height=480, colors=rng.uniform(0, 1, (len(pts), 3)) if n_points else None,
                       budget=max(n_points, 1), show_labels=show_labels)
    return json.loads(pio.to_json(fig))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", default="0,0,5000,20000,60000,20000",
                    help="point counts, in order (the first draw also compiles the shaders)")
    ap.add_argument("--no-labels", action="store_true", help="boxes without their label markers (one trace a layer)")
    args = ap.parse_args(argv)
    import plotly
    from playwright.sync_api import sync_playwright

    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "gl3d.html"
        page_file.write_text(f"<html><body><div id=g style='width:900px;height:600px'></div>"
                             f"<script src='file://{js}'></script></body></html>")
        print("| points | `Plotly.newPlot` (ms) | `Plotly.react`, same figure (ms) |\n|---:|---:|---:|")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=os.environ.get("OV3D_CHROMIUM", "/usr/bin/chromium"),
                                        args=["--no-sandbox", "--use-gl=swiftshader", "--enable-unsafe-swiftshader"])
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(page_file.as_uri())
            for n in (int(x) for x in args.points.split(",")):
                new, react = page.evaluate(_DRAW, figure(n, show_labels=not args.no_labels))
                print(f"| {n:,} | {new:.0f} | {react:.0f} |", flush=True)
            browser.close()


if __name__ == "__main__":
    main()
