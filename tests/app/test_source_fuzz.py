"""Bad benchmarks opened through the URL (``?src=config&cfg=...``) show a message, never a traceback.

Each case is a config (or a file it names) broken one way: wrong YAML types, bytes that are not UTF-8, resource
bombs, a config that is a folder or an image, GT that is not JSON or not Omni3D, a GT ``file_path`` that is a text
file, a folder, a path outside the roots or a decompression bomb, prediction files that are truncated, hold strings
for numbers, name unknown images, or are ``.pth`` files that are not torch files or hold bfloat16 tensors (refused
by name). Every page visited must have no exception element; the broken ones must say what is wrong; one broken run
must not blank the others. An ``hf:`` encoder that is not on disk is refused without contacting the network.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import zlib
from pathlib import Path

import pytest
import yaml
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
OVERVIEW, SCENE, CONFUSION, DATA = ("app_pages/overview.py", "app_pages/scene.py", "app_pages/confusion.py",
                                    "app_pages/data_source.py")


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels (no pixel data): a decompression bomb to PIL."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))


class Cases:
    """Writes the broken configs next to a copy of the mini benchmark's files; ``add`` returns the config path."""

    def __init__(self, root: Path, mini_config: Path):
        self.root = root
        self.mini = mini_config.parent
        self.base = yaml.safe_load(mini_config.read_text())
        self.n = 0

    def path(self, name: str) -> Path:
        return self.root / name

    def raw(self, text: bytes | str, name: str | None = None) -> Path:
        self.n += 1
        p = self.root / (name or f"c{self.n}.yaml")
        p.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        return p

    def config(self, edit) -> Path:
        """The mini config (absolute paths to its files) changed by ``edit(cfg)``."""
        cfg = json.loads(json.dumps(self.base))
        for d in cfg["datasets"]:
            d["gt"] = str(self.mini / d["gt"])
            d["images"] = str(self.mini / d["images"])
            d["points"] = str(self.mini / d["points"])
        for r in cfg["runs"]:
            r["predictions"] = str(self.mini / r["predictions"])
        cfg["cache_dir"] = str(self.root / f".cache{self.n}")
        edit(cfg)
        return self.raw(yaml.safe_dump(cfg, sort_keys=False))

    def gt_edit(self, edit) -> Path:
        """A config whose first dataset's GT is a copy of MiniIndoor's changed by ``edit(doc)``."""
        doc = json.loads((self.mini / "MiniIndoor" / "gt.json").read_text())
        edit(doc)
        gt = self.raw(json.dumps(doc), f"gt{self.n}.json")

        def point(cfg):
            cfg["datasets"][0]["gt"] = str(gt)
        return self.config(point)

    def run_file(self, data: bytes | str, name: str, fmt: str = "cubercnn-json", **extra) -> Path:
        """A config with one more run on MiniIndoor whose file is ``data``."""
        f = self.raw(data, name)

        def add(cfg):
            cfg["runs"].append({"name": f"broken_{self.n}", "dataset": "MiniIndoor", "predictions": str(f),
                                "format": fmt, **extra})
        return self.config(add)


def build_cases(root: Path, mini_config: Path) -> list[tuple[str, Path, tuple[str, ...], bool]]:
    """(case id, config, pages to visit, whether the first page must show an error)."""
    c = Cases(root, mini_config)
    pages_img = (OVERVIEW, SCENE, CONFUSION)
    out = [
        ("datasets-is-a-string", c.raw("datasets: s3cr3t\n"), (OVERVIEW,), True),
        ("name-is-a-number", c.raw("datasets:\n  - name: 5\n    gt: g.json\n"), (OVERVIEW,), True),
        ("runs-is-a-mapping", c.raw("datasets: []\nruns: {a: 1}\n"), (OVERVIEW,), True),
        ("benchmark-name-is-a-list", c.config(lambda cfg: cfg.update(name=[1, 2])), (OVERVIEW,), True),
        ("boolean-as-text", c.config(lambda cfg: cfg["datasets"][0].update(environment=True)), (OVERVIEW,), True),
        ("unknown-key", c.config(lambda cfg: cfg["datasets"][0].update(gtt="x")), (OVERVIEW,), True),
        ("not-utf8", c.raw(b"name: caf\xe9\ndatasets: []\n"), (OVERVIEW,), True),
        ("billion-laughs", c.raw("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"{k}: &{k} [{','.join(['*' + p] * 9)}]\n" for p, k in zip("abcdefgh", "bcdefghi"))), (OVERVIEW,), True),
        ("deep-nesting", c.raw("a: " + "[" * 5000 + "]" * 5000 + "\n"), (OVERVIEW,), True),
        ("over-1-MiB", c.raw("# " + "x" * (1 << 20) + "\ndatasets: []\n"), (OVERVIEW,), True),
        ("empty-file", c.raw(""), (OVERVIEW,), True),
        ("top-level-list", c.raw("- a\n- b\n"), (OVERVIEW,), True),
        ("an-image-as-config", c.raw(_png_header(4, 4), "pic.yaml"), (OVERVIEW,), True),
        ("gt-not-json", c.gt_edit(lambda d: d.clear()), (OVERVIEW,), True),
        ("gt-missing-file", c.config(lambda cfg: cfg["datasets"][0].update(gt=str(root / "nope.json"))),
         (OVERVIEW,), True),
        ("gt-outside-the-roots", c.config(lambda cfg: cfg["datasets"][0].update(gt="/etc/hostname")),
         (OVERVIEW,), True),
        ("gt-K-is-text", c.gt_edit(lambda d: d["images"][0].update(K="s3cr3t")), (OVERVIEW,), True),
        ("gt-category-name-is-a-number", c.gt_edit(lambda d: d["categories"][0].update(name=7)), (OVERVIEW,), True),
    ]
    text_jpg = c.raw("not an image", "notimage.jpg")
    c.raw(_png_header(60000, 60000), "bomb.png")
    (root / "a_folder.jpg").mkdir(exist_ok=True)
    for case, fp in (("file-path-is-text", str(text_jpg)), ("file-path-is-a-folder", str(root / "a_folder.jpg")),
                     ("file-path-outside-the-roots", "../" * 12 + "etc/hostname"),
                     ("file-path-is-a-decompression-bomb", str(root / "bomb.png"))):
        out.append((case, c.gt_edit(lambda d, fp=fp: [im.update(file_path=fp) for im in d["images"]]), pages_img,
                    False))
    out += [
        ("predictions-truncated", c.run_file('[{"image_id": 100, "bbox3D"', "trunc.json"), (OVERVIEW, DATA), True),
        ("predictions-strings-for-numbers", c.run_file(json.dumps([{
            "image_id": 100, "category_id": 0, "score": "high", "bbox": [0, 0, 1, 1], "bbox3D": "x",
            "center_cam": [0, 0, "far"], "dimensions": [1, 1, 1], "pose": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}]),
            "strings.json"), (OVERVIEW, DATA), True),
        ("predictions-unknown-images", c.run_file(json.dumps([{
            "image_id": 987654, "category_id": 0, "score": 0.5, "bbox": [0, 0, 1, 1], "depth": 3.0,
            "bbox3D": [[0, 0, 3]] * 8, "center_cam": [0, 0, 3], "dimensions": [1, 1, 1],
            "pose": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]}]), "unknown.json"), (OVERVIEW,), False),
        ("pth-not-torch", c.run_file(b"\x00garbage" * 10, "garbage.pth", "cubercnn-pth",
                                     category_list=["chair"]), (OVERVIEW, DATA), True),
        ("config-is-a-folder", root / "a_folder.jpg", (OVERVIEW,), True),
    ]
    out.append(("pth-bfloat16", _bf16_case(c), (OVERVIEW, SCENE), True))
    return out


def _bf16_case(c: Cases) -> Path:
    import torch

    doc = json.loads((c.mini / "MiniIndoor" / "good" / "preds.json").read_text())
    by_image: dict[int, list] = {}
    for r in doc:
        inst = {k: torch.tensor(v, dtype=torch.bfloat16) if k in ("score", "center_cam", "dimensions", "pose")
                else v for k, v in r.items() if k not in ("image_id", "category_name")}
        inst["category_id"] = ["chair", "table", "sofa", "bed"].index(r["category_name"])
        by_image.setdefault(r["image_id"], []).append(inst)
    recs = [{"image_id": i, "instances": v} for i, v in by_image.items()]
    p = c.root / "bf16.pth"
    torch.save(recs, p)

    def add(cfg):
        cfg["runs"].append({"name": "bf16", "dataset": "MiniIndoor", "predictions": str(p), "format": "cubercnn-pth",
                            "category_list": ["chair", "table", "sofa", "bed"]})
    return c.config(add)


@pytest.fixture(scope="module")
def cases(tmp_path_factory, mini_config):
    return build_cases(tmp_path_factory.mktemp("fuzz"), mini_config)


def _visit(cfg: Path, page: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"src": "config", "cfg": str(cfg), **query})
    at.run()
    if page != OVERVIEW:
        at.switch_page(page)
        at.run()
    return at


def test_every_bad_config_is_a_message_never_a_traceback(tiny_demo, cases):
    failures = []
    for case, cfg, pages, must_say in cases:
        for page in pages:
            at = _visit(cfg, page, **({"3d": "1"} if page == SCENE else {}))
            if at.exception:
                failures.append(f"{case} on {page}: {at.exception[0].value[:300]}")
                continue
            said = [e.value for e in at.error] + [w.value for w in at.warning]
            if must_say and page == pages[0] and not said:
                failures.append(f"{case} on {page}: no message")
            if any("s3cr3t" in s for s in said):
                failures.append(f"{case} on {page}: the message quotes the file: {said}")
    assert not failures, "\n".join(failures)
    assert len(cases) >= 28


def test_one_broken_run_does_not_blank_the_benchmark(tiny_demo, cases):
    cfg = next(cfg for case, cfg, *_ in cases if case == "predictions-truncated")
    at = _visit(cfg, OVERVIEW)
    board = at.dataframe[0].value
    assert set(board["run"]) == {"good", "sloppy"}  # the others are scored
    assert any("broken\\_" in e.value and "trunc.json" in e.value for e in at.error)  # run names escaped
    at.switch_page(DATA)
    at.run()
    assert any("broken\\_" in e.value and "trunc.json" in e.value for e in at.error)  # listed with its message


def test_a_bfloat16_pth_is_refused_by_name_and_the_other_runs_still_score(tiny_demo, cases):
    """bfloat16 keeps 8 bits of mantissa (a 30 m depth to ~0.1 m): the run is refused with the tensor kind named
    rather than scored on rounded boxes (the CLI message names the kind: tests/io/test_loud_inputs.py)."""
    cfg = next(cfg for case, cfg, *_ in cases if case == "pth-bfloat16")
    at = _visit(cfg, OVERVIEW)
    assert not at.exception
    # the app names what it found by kind, never file text (so "got a string"), and says what it expected
    assert any("bf16.pth" in e.value and "score" in e.value and "tensor of a numpy dtype" in e.value
               for e in at.error), [e.value for e in at.error]
    board = at.dataframe[0].value
    assert "bf16" not in set(board["run"]) and "good" in set(board["run"])


class _Listener:
    """A loopback TCP port that counts the connections made to it (a stand-in Hugging Face hub)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.hits = 0
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            conn.close()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


def test_an_hf_encoder_not_on_disk_is_refused_at_once_without_network(tiny_demo, monkeypatch, tmp_path,
                                                                      record_property):
    hub = _Listener()
    try:
        monkeypatch.setenv("OV3D_ENCODER", "hf:some-lab/siglip-not-downloaded")
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        at = AppTest.from_file(APP, default_timeout=180)
        at.run()
        at.switch_page("app_pages/prompt_lab.py")
        t = time.perf_counter()
        at.run()
        record_property("prompt_lab_refusal_s", round(time.perf_counter() - t, 2))
        assert not at.exception
        msg = " ".join(e.value for e in at.error)
        assert "not on disk" in msg and "local model folder" in msg
        assert "`huggingface-cli download <checkpoint>`" in msg
        assert hub.hits == 0  # nothing tried to reach a hub
    finally:
        hub.close()
