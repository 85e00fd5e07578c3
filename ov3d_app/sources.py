"""Where the app may read benchmarks from, and how uploads and folders become benchmark configs.

- ``allowed_roots()``: the folders a page may open a config, GT, prediction, image, depth or point file from: the
  demo, the server's ``--data-root`` (``streamlit run app.py -- --data-root DIR``, repeatable) and
  ``$OV3D_DATA_ROOT`` (the working directory when neither is given; ``ov3d_core.io.paths.default_roots``), plus the
  app's own cache (``app_cache_dir()``), which holds uploads and the configs written here.
- ``store_upload(gt, predictions, images)``: uploaded files into a fresh folder ``<cache>/uploads/<content hash>``
  (the same files give the same folder, so an upload is stored once and nothing is ever overwritten).
- ``config_for_folder(folder, out_dir)``: what ``ov3d init FOLDER`` writes (``ov3d_core.commands.init``: the scan and
  the commented YAML), checked against the roots, written as a new file under the cache.

Everything here is pure file work (no streamlit import), so it is unit-tested directly.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ov3d_core.errors import InputError
from ov3d_core.io.paths import DATA_ROOT_ENV, DEMO_DIR_ENV, REPO, check_under_roots, default_roots, is_under_roots
from ov3d_core.io.yaml_safe import Kind

#: Environment variable naming the app's cache folder (uploads, written configs).
APP_CACHE_ENV = "OV3D_APP_CACHE"
#: The command line flag of the server (after ``--`` on the ``streamlit run`` line).
DATA_ROOT_FLAG = "--data-root"
_SAFE = re.compile(r"[^A-Za-z0-9._ +-]")
#: What the Data source page says first when a folder outside the allowed roots is refused (the same text whether
#: that folder exists or not). Only whoever starts the server can add a root; nothing a visitor sends adds one.
ALLOW_ROOT_HINT = (
    "**This server reads only from its allowed folders** (listed above). To use another folder, whoever runs the "
    f"server restarts it with that folder as a data root: `streamlit run app.py -- {DATA_ROOT_FLAG} DIR` "
    f"(repeatable), or `{DATA_ROOT_ENV}=DIR streamlit run app.py` (several folders separated by `:`). A visitor "
    "cannot add a folder from the browser; the **Upload files** tab takes the files instead.")
IMAGE_EXTS = (".jpg", ".jpeg", ".png")


def app_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$OV3D_APP_CACHE`` or ``.ov3d_cache/app`` in the repository, resolved."""
    env = os.environ if environ is None else environ
    value = env.get(APP_CACHE_ENV)
    return (Path(value).expanduser() if value else REPO / ".ov3d_cache" / "app").resolve()


def server_data_roots(argv: Sequence[str] | None = None) -> list[str]:
    """The ``--data-root`` values of the server's command line (``sys.argv[1:]`` by default; unknown flags are
    ignored, so the test runner's own arguments do not matter)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(DATA_ROOT_FLAG, action="append", default=[])
    known, _ = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    return list(known.data_root)


def allowed_roots(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The demo, ``--data-root`` / ``$OV3D_DATA_ROOT`` (else the working directory) and the app cache, resolved.
    (Remembered per command line, environment and working directory: every page run asks.)"""
    env = os.environ if environ is None else environ
    args = tuple(sys.argv[1:] if argv is None else argv)
    names = (DATA_ROOT_ENV, APP_CACHE_ENV, DEMO_DIR_ENV)
    return _roots(args, tuple(env.get(k) for k in names), os.getcwd())


@functools.lru_cache(maxsize=32)
def _roots(argv: tuple[str, ...], values: tuple[str | None, ...], cwd: str) -> tuple[Path, ...]:
    env = {k: v for k, v in zip((DATA_ROOT_ENV, APP_CACHE_ENV, DEMO_DIR_ENV), values) if v is not None}
    roots = default_roots(server_data_roots(argv) or None, environ=env, cwd=cwd)
    return tuple(dict.fromkeys([*roots, app_cache_dir(env)]))


def display_path(path: str | os.PathLike) -> str:
    """A path as the app shows and links it: relative to the working directory when inside it."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(p)


# ================================================================================================ uploads
@dataclass(frozen=True)
class Upload:
    """One uploaded file: the name the browser gave (may hold a relative folder path), its bytes, and for a
    prediction file the run name the upload form gave it (None: the naming rule's, :func:`suggest_run_names`)."""

    name: str
    data: bytes
    run: str | None = None


def safe_parts(name: str) -> list[str]:
    """The parts of an uploaded file's name that are safe as path components (no ``..``, no separators, no
    characters outside ``[A-Za-z0-9._ +-]``); empty when nothing is left."""
    parts = []
    for part in re.split(r"[\\/]+", name):
        part = _SAFE.sub("_", part).strip(" .")
        if part and part not in (".", ".."):
            parts.append(part)
    return parts


def _unique(name: str, taken: set[str]) -> str:
    stem, dot, ext = name.rpartition(".") if "." in name else (name, "", "")
    out, k = name, 1
    while out.lower() in taken:
        k += 1
        out = f"{stem}_{k}{dot}{ext}"
    taken.add(out.lower())
    return out


def _gt_file_paths(gt: Sequence[Upload]) -> list[str]:
    """Every image ``file_path`` of the uploaded GT files that is a safe relative path (for placing images)."""
    out = []
    for f in gt:
        try:
            doc = json.loads(f.data)
        except (ValueError, RecursionError):
            continue  # the scan reports the file
        images = doc.get("images") if isinstance(doc, dict) else None
        for im in images if isinstance(images, list) else ():
            fp = im.get("file_path") if isinstance(im, dict) else None
            if isinstance(fp, str) and fp and not Path(fp).is_absolute() and safe_parts(fp) == fp.split("/"):
                out.append(fp)
    return out


def _image_places(images: Sequence[Upload], file_paths: list[str]) -> list[str]:
    """Where each uploaded image goes, relative to the upload folder: the GT ``file_path`` it matches (the longest
    common tail of path parts, at least the file name), else ``images/<its own path>``."""
    by_name: dict[str, list[list[str]]] = {}
    for fp in file_paths:
        parts = fp.split("/")
        by_name.setdefault(parts[-1], []).append(parts)
    out, taken = [], set()
    for f in images:
        parts = safe_parts(f.name) or ["image"]
        best, best_n = None, 0
        for cand in by_name.get(parts[-1], ()):
            n = 0
            while n < min(len(cand), len(parts)) and cand[-1 - n] == parts[-1 - n]:
                n += 1
            if n > best_n:
                best, best_n = cand, n
        rel = "/".join(best) if best is not None else "/".join(["images", *parts])
        if rel.lower() in taken:
            rel = "/".join(["images", "duplicates", _unique(parts[-1], taken)])
        taken.add(rel.lower())
        out.append(rel)
    return out


def _is_run_file(f: Upload) -> bool:
    return not f.name.lower().endswith(".txt")  # a .txt among the predictions is a .pth's category list


def suggest_run_names(predictions: Sequence[Upload]) -> list[str | None]:
    """Per prediction upload, the run name the upload form offers: the one naming rule of every route
    (``ov3d_core.commands.init.run_name``, as ``ov3d init`` names the same file; repeats told apart by
    ``init.unique_names``); None for a category list (.txt)."""
    from ov3d_core.commands.init import run_name, unique_names

    runs = [f for f in predictions if _is_run_file(f)]
    names = iter(unique_names(run_name(Path(*(safe_parts(f.name) or ["predictions.json"]))) for f in runs))
    return [next(names) if _is_run_file(f) else None for f in predictions]


def _run_places(predictions: Sequence[Upload]) -> list[tuple[str, Upload, str]]:
    """(relative path, upload, run name) of every prediction file of an upload: ``predictions/<run name>/<file>``
    (the run name made safe as a folder name, repeats told apart)."""
    names = suggest_run_names(predictions)
    out, folders = [], set()
    for f, suggested in zip(predictions, names):
        if not _is_run_file(f):
            continue
        run = f.run if f.run is not None else suggested
        name = (safe_parts(f.name) or ["predictions.json"])[-1]
        folder = _unique("_".join(safe_parts(run)) or "run", folders)
        out.append((f"predictions/{folder}/{name}", f, run))
    return out


def upload_run_names(predictions: Sequence[Upload]) -> dict[str, str]:
    """``{path in the upload folder: run name}`` of the prediction files (for ``config_for_folder(run_names=)``)."""
    return {rel: run for rel, _, run in _run_places(predictions)}


def upload_layout(gt: Sequence[Upload], predictions: Sequence[Upload], images: Sequence[Upload] = ()
                  ) -> list[tuple[str, bytes]]:
    """(relative path, bytes) of every uploaded file in its upload folder: GT files at the top (their images
    resolve from there), each prediction file in ``predictions/<its run name>/`` (``_run_places``; a
    ``category_list.txt`` among them goes beside every ``.pth``), images where their GT ``file_path`` says."""
    if not gt:
        raise InputError("upload", None, "ground truth", "at least one GT file (Omni3D JSON)", Kind("none"))
    out: list[tuple[str, bytes]] = []
    taken: set[str] = set()
    for f in gt:
        out.append((_unique((safe_parts(f.name) or ["gt.json"])[-1], taken), f.data))
    lists = [f for f in predictions if not _is_run_file(f)]
    for rel, f, _ in _run_places(predictions):
        out.append((rel, f.data))
        if rel.lower().endswith(".pth"):
            folder = rel.rsplit("/", 1)[0]
            out += [(f"{folder}/{(safe_parts(t.name) or ['category_list.txt'])[-1]}", t.data) for t in lists]
    places = _image_places(images, _gt_file_paths(gt))
    out += [(rel, f.data) for rel, f in zip(places, images)]
    return out


def store_upload(gt: Sequence[Upload], predictions: Sequence[Upload], images: Sequence[Upload] = (), *,
                 cache_dir: str | os.PathLike | None = None) -> Path:
    """Write an upload into ``<cache>/uploads/<hash of names and bytes>`` and return that folder. The same files
    give the same folder (kept as it is); a new one is written to a staging folder and moved into place, so a
    half-written upload is never seen and nothing existing is overwritten."""
    layout = upload_layout(gt, predictions, images)
    h = hashlib.blake2b(digest_size=12)
    for rel, data in sorted(layout):
        h.update(rel.encode("utf-8") + b"\0" + len(data).to_bytes(8, "little"))
        h.update(data)
    base = Path(cache_dir) if cache_dir is not None else app_cache_dir()
    final = base / "uploads" / h.hexdigest()
    if (final / ".complete").is_file():
        return final
    stage = base / "uploads" / f".{final.name}.{os.getpid()}.{os.urandom(4).hex()}"
    stage.mkdir(parents=True)
    try:
        for rel, data in layout:
            p = stage / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            with open(p, "xb") as fh:
                fh.write(data)
        (stage / ".complete").write_text("")
        try:
            stage.rename(final)
        except OSError:  # another session stored the same files first
            if not (final / ".complete").is_file():
                raise
    finally:
        if stage.exists():
            import shutil

            shutil.rmtree(stage, ignore_errors=True)
    return final


# ================================================================================================ configs
@dataclass(frozen=True)
class FolderConfig:
    """A config written for a folder: its path, the YAML text, and the scan it came from."""

    path: Path
    text: str
    scan: object  # ov3d_core.commands.init.Scan


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _write_new(out_dir: Path, text: str) -> Path:
    """``out_dir/benchmark.yaml`` holding ``text``: created if missing, reused if it already holds ``text``,
    else ``benchmark-<hash>.yaml`` (an existing file is never changed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("benchmark.yaml", f"benchmark-{_digest(text)[:10]}.yaml"):
        p = out_dir / name
        try:
            with open(p, "x", encoding="utf-8") as fh:
                fh.write(text)
            return p
        except FileExistsError:
            if p.read_text(encoding="utf-8") == text:
                return p
    raise InputError(out_dir.name, None, None, "a folder where a new benchmark config can be written",
                     Kind("two other configs there already"))


def config_for_folder(folder: str | os.PathLike, *, roots: Iterable[str | os.PathLike] | None = None,
                      out_dir: str | os.PathLike | None = None, name: str | None = None,
                      cache_dir: str | os.PathLike | None = None,
                      run_names: Mapping[str, str] | None = None) -> FolderConfig:
    """Scan ``folder`` as ``ov3d init`` does and write its commented benchmark YAML as a new file.

    ``folder`` must lie inside ``roots`` (default ``allowed_roots()``; refused naming only its basename). The YAML
    goes to ``out_dir`` (default ``<cache>/scans/<hash of the folder's path>``), its paths relative to it; it is
    validated with the roots before it is written (``InputError`` when it names no dataset or a path outside).
    Runs are named as ``ov3d init`` names them (``init.run_name``), except the files ``run_names`` names (paths
    relative to ``folder``: an upload's names, ``upload_run_names``)."""
    from ov3d_core.commands.init import render_yaml, scan_folder
    from ov3d_core.io.config import parse_config
    from ov3d_core.io.yaml_safe import load_yaml_bytes

    roots = tuple(allowed_roots() if roots is None else roots)
    where = check_under_roots(folder, roots, what="a folder")
    if not where.is_dir():
        raise InputError(where.name or "the folder", None, None, "an existing folder", Kind("no such folder"))
    base = Path(cache_dir) if cache_dir is not None else app_cache_dir()
    out = Path(out_dir) if out_dir is not None else base / "scans" / _digest(str(where))
    out = out.resolve()
    scan = scan_folder(where, out, run_names=run_names)
    text = render_yaml(scan, out, name=name or where.name, command="the app's Data source page")
    label = "benchmark.yaml"
    parse_config(load_yaml_bytes(text.encode("utf-8"), file=label), file=label, base=out, path=out / label,
                 allowed_roots=roots)
    return FolderConfig(_write_new(out, text), text, scan)


def scan_summary(scan) -> dict[str, list[dict]]:
    """The datasets, runs and unused files of a scan as rows for tables (names and notes, paths as basenames)."""
    datasets = [{"dataset": d.name, "found": d.summary, "images": d.images.name if d.images else "—",
                 "notes": "; ".join(d.notes)} for d in scan.datasets]
    runs = [{"run": r.name, "dataset": r.dataset.name if r.dataset else "—", "file": r.path.name,
             "format": r.format, "found": r.summary, "used": not r.disabled and r.dataset is not None,
             "notes": r.disabled or r.dataset_note} for r in scan.runs]
    skipped = [{"file": p.name, "why": why} for p, why in scan.skipped]
    return {"datasets": datasets, "runs": runs, "skipped": skipped}


__all__ = ["ALLOW_ROOT_HINT", "APP_CACHE_ENV", "DATA_ROOT_ENV", "DATA_ROOT_FLAG", "FolderConfig", "Upload", "allowed_roots",
           "app_cache_dir", "config_for_folder", "display_path", "is_under_roots", "safe_parts", "scan_summary",
           "server_data_roots", "store_upload", "suggest_run_names", "upload_layout", "upload_run_names"]
