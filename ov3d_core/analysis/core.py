"""The :class:`Analysis` object: a loaded benchmark, one memo, and every table of the product as a method.

The methods live in mixins, one module each (``recipe``: the label view, score and context of a view; ``tables``;
``diagnostics``; ``prompts``; ``stats``); this module builds the object and names what the config holds.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pandas as pd

from ov3d_core.analysis.diagnostics import Diagnostics
from ov3d_core.analysis.prompts import Prompts
from ov3d_core.analysis.recipe import Recipe
from ov3d_core.analysis.stats import Stats
from ov3d_core.analysis.tables import Tables
from ov3d_core.analysis.view import RunFailure, View, view_error
from ov3d_core.benchmark import Benchmark
from ov3d_core.compile_notice import announce_compiles
from ov3d_core.errors import InputError
from ov3d_core.io.config import config_from_files
from ov3d_core.memo import Memo
from ov3d_core.ontology import resolve_ontology
from ov3d_core.scorecache import ScoreCache

__all__ = ["Analysis"]


class Analysis(Recipe, Tables, Diagnostics, Prompts, Stats):
    """Every table of the product for a :class:`View` of a loaded benchmark (see ``ov3d_core.analysis``)."""

    def __init__(self, benchmark, *, memo_items: int = 1024, embedding_dir: str | Path | None = None,
                 encoder_options: Mapping[str, Any] | None = None):
        """``embedding_dir``: crop-embedding cache (default ``<cache_dir>/embeddings``); ``encoder_options``:
        keywords for ``make_encoder`` (device, batch_size) used the first time an encoder spec is needed."""
        announce_compiles()  # the first computation on an install compiles the kernels: said on stderr
        self.benchmark = benchmark
        self._memo = Memo(memo_items)
        self._scores = ScoreCache(Path(benchmark.config.cache_dir) / "scores")
        self._hashed = threading.Event()
        self.embedding_dir = Path(embedding_dir) if embedding_dir else Path(benchmark.config.cache_dir) / "embeddings"
        self.encoder_options = dict(encoder_options or {})

    @classmethod
    def from_yaml(cls, path: str | Path, **kw) -> "Analysis":
        """A benchmark config (YAML; ``docs/benchmark_yaml.md``)."""
        return cls(Benchmark.from_yaml(path, **kw))

    @classmethod
    def from_files(cls, gt: str | Path | Sequence[str | Path], predictions: str | Path | Sequence[str | Path], *,
                   run_names: Sequence[str] | None = None, formats: Sequence[str] | None = None,
                   category_list: Sequence[str] | None = None, categories: Sequence[str] | None = None,
                   cache_dir: str | Path | None = None, dataset_name: str | None = None) -> "Analysis":
        """One dataset from Omni3D GT file(s) and one run per prediction file (what ``ov3d evaluate`` builds)."""
        gts = [gt] if isinstance(gt, (str, Path)) else list(gt)
        preds = [predictions] if isinstance(predictions, (str, Path)) else list(predictions)
        cfg = config_from_files(gts, preds, run_names=list(run_names) if run_names else None,
                                formats=list(formats) if formats else None,
                                category_list=tuple(category_list) if category_list else None,
                                cache_dir=cache_dir, dataset_name=dataset_name)
        if categories is not None:
            ds = next(iter(cfg.datasets.values()))
            cfg = replace(cfg, datasets={ds.name: replace(ds, categories=tuple(categories))})
        return cls(Benchmark(cfg))

    @classmethod
    def from_objects(cls, dataset, runs: Iterable, *, cache_dir: str | Path | None = None) -> "Analysis":
        """In-memory data: a :class:`~ov3d_core.model.Dataset` and :class:`~ov3d_core.model.Run` objects (built from
        arrays with ``ov3d_core.model.BoxSet``)."""
        return cls(Benchmark.from_objects(dataset, list(runs), cache_dir=cache_dir))

    @property
    def datasets(self) -> list[str]:
        return self.benchmark.dataset_names

    def runs(self, dataset: str | None = None) -> list[str]:
        return self.benchmark.run_names(dataset)

    def view(self, dataset: str | None = None, run: str | None = None, **kw) -> View:
        """A :class:`View` with defaults: the first dataset and its first run."""
        dataset = dataset or (self.datasets[0] if self.datasets else None)
        if dataset is None:
            raise InputError(self.config_file, None, "datasets", "at least one dataset", "none")
        if run is None and self.runs(dataset):
            run = self.runs(dataset)[0]
        return View(dataset=dataset, run=run, **kw)

    def ontology(self):
        """The super-category ontology of the config (``ontology:``; the paper's nine, ``ov3d-bench``, by default):
        what the super-category confusion, the semantic tree cost and FG-OVD's ontology tiers project onto."""
        return resolve_ontology(self.benchmark.config.ontology)

    @property
    def name(self) -> str:
        """The benchmark's name (the config's ``name:``)."""
        return self.benchmark.config.name

    @property
    def config_path(self) -> Path | None:
        """The benchmark YAML this analysis was opened from (None for files or objects given directly)."""
        return self.benchmark.config.path

    @property
    def config_file(self) -> str:
        """The config's path for messages (``<config>`` when there is none)."""
        return str(self.benchmark.config.path or "<config>")

    def _need_run(self, view: View) -> str:
        if view.run is None:
            raise view_error("run", f"a run on dataset {view.dataset!r}", None)
        self.benchmark.run_spec(view.run, view.dataset)  # InputError when unknown
        return view.run

    def _memoised(self, name: str, key, compute: Callable[[], Any]):
        return self._memo.get((name, key), compute)

    def clear(self) -> None:
        """Forget memoised results (the benchmark's loaded files and geometry stay)."""
        self._memo.clear()

    def failures(self) -> list[RunFailure]:
        """Runs whose files fail to load, each with its one-line message (the others are unaffected)."""
        out = []
        for spec in self.benchmark.config.runs.values():
            try:
                self.benchmark.run(spec.name, spec.dataset)
            except InputError as exc:
                out.append(RunFailure(spec.dataset, spec.name, str(exc)))
        return out


    def methods(self) -> pd.DataFrame:
        """One row per run name (OV3D-Bench Table 1, as far as a config says it): ``run``, ``description``,
        ``vocabulary`` ("closed" with a ``closed_vocabulary``, else "open"), ``prompt`` ("per-template files" for a
        prompt-conditioned run, "class names" else), ``n_templates``, ``trained_on``, ``datasets`` (where it was
        run) and ``format``."""
        rows: dict[str, dict] = {}
        for spec in self.benchmark.config.runs.values():
            r = rows.setdefault(spec.name, {
                "run": spec.name, "description": spec.description,
                "vocabulary": "closed" if spec.closed_vocabulary is not None else "open",
                "prompt": "per-template files" if spec.per_template else "class names",
                "n_templates": len(spec.per_template), "trained_on": ", ".join(spec.trained_on), "datasets": [],
                "format": spec.format})
            r["datasets"].append(spec.dataset)
        out = pd.DataFrame(list(rows.values()), columns=["run", "description", "vocabulary", "prompt", "n_templates",
                                                         "trained_on", "datasets", "format"])
        out["datasets"] = out["datasets"].map(", ".join)
        return out

    # ------------------------------------------------------------------ the config's inputs (what the CLI reports on)
    def run_entries(self) -> list[tuple[str, str]]:
        """Every (dataset, run) of the config, in config order."""
        return [(spec.dataset, spec.name) for spec in self.benchmark.config.runs.values()]

    def load_inputs(self) -> None:
        """Read (and check) every GT and prediction file of the config, before anything is scored: a bad file fails
        here with its one-line message, before any geometry is computed."""
        for dataset, run in self.run_entries():
            self.benchmark.dataset(dataset)
            self.benchmark.run(run, dataset)

    def geometry(self, dataset: str, run: str, *, progress=None) -> None:
        """Compute (or read from the cache) the GT x prediction pair geometry of a run; ``progress(done, total)``
        is called while pairs are computed (not on cache hits)."""
        self.benchmark.pairs(run, dataset, progress=progress)

    def dataset_info(self, dataset: str) -> dict:
        """``name`` (the loader's), ``environment``, ``n_images``, ``n_gt_boxes`` and ``n_categories`` of a dataset."""
        ds = self.benchmark.dataset(dataset)
        return {"name": ds.name, "environment": self.environment(dataset), "n_images": int(len(ds.images)),
                "n_gt_boxes": int(len(ds.gt)), "n_categories": len(ds.vocabulary)}

    def n_predictions(self, dataset: str, run: str) -> int:
        """The number of predictions in the run's file (before any vocabulary, protocol or threshold)."""
        return int(len(self.benchmark.run(run, dataset).pred))
