"""Issue 25 item 9: the prompt lab's first open on the demo, in a fresh process (AppTest, this process).

A copy of the demo (its load and pair caches kept, its crop-embedding and text caches removed: the prompt lab has
never been opened on it) is served as a benchmark config. The app's first page (the Overview) is rendered; then,
after ``--wait`` seconds (or, with ``--until-warm``, once the background warm-up of the prompt lab has ended:
``ov3d_app.cache.prompt_lab_warm``), the prompt lab is opened and timed, then opened once more (cached).

    python bench/bench_prompt_lab.py --demo /path/to/demo --wait 0          # open at once
    python bench/bench_prompt_lab.py --demo /path/to/demo --until-warm      # after the background warm-up
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--demo", required=True)
    p.add_argument("--wait", type=float, default=0.0)
    p.add_argument("--until-warm", action="store_true")
    p.add_argument("--label", default="")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ov3d_pl_"))
    demo = tmp / "demo"
    shutil.copytree(args.demo, demo, ignore=shutil.ignore_patterns("embeddings", "text", "*.tags.json"))
    os.environ["OV3D_DATA_ROOT"] = str(tmp)
    os.environ["OV3D_APP_CACHE"] = str(tmp / "app_cache")
    from streamlit.testing.v1 import AppTest

    t0 = time.perf_counter()
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.query_params["src"] = "config"
    at.query_params["cfg"] = str(demo / "benchmark.yaml")
    at.query_params["ds"] = "demo_indoor"
    at.run()
    t_overview = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    t1 = time.perf_counter()
    if args.until_warm:
        from ov3d_app import cache

        while not any(k[0] == str(demo / "benchmark.yaml") for k in cache.prompt_lab_warm) and time.perf_counter() - t1 < 600:
            time.sleep(0.1)
    else:
        time.sleep(args.wait)
    waited = time.perf_counter() - t1
    t2 = time.perf_counter()
    at.switch_page("app_pages/prompt_lab.py")
    at.run()
    first = time.perf_counter() - t2
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == "Prompt lab" and at.metric, "the prompt lab did not render its numbers"
    t3 = time.perf_counter()
    at.run()
    second = time.perf_counter() - t3
    print(json.dumps({"label": args.label, "overview_s": round(t_overview, 2), "waited_s": round(waited, 2),
                      "prompt_lab_first_open_s": round(first, 2), "prompt_lab_rerun_s": round(second, 2)}))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
