"""Training-free VLM remapping (OV3D-Bench "SigLIPv2 remapping"): crop each predicted 3D box's 2D projection, embed
it with an image-text encoder, and relabel the box with its most similar dataset category above a threshold.

Modules: ``crops`` (crop boxes and crop images), ``encoders`` (``Encoder`` protocol, ``HFEncoder`` for
SigLIP / SigLIP 2 / CLIP, ``ProxyEncoder`` demo stand-in), ``templates`` (the 15 prompt templates, ensembling),
``cache`` (crop-embedding store on disk, text-embedding cache), ``remap`` (pure remapping functions), ``sources`` (a run's crop inputs), ``pipeline``
(run-level glue and the live re-scorer), ``engines`` (who computes the embeddings: in-process or on Ray).
Template / theta sweeps over cached embeddings score views, so they live with the front door
(``ov3d_core.analysis.sweep``). torch and transformers are imported only when an encoder is built; ray only by the
Ray engine.
"""

from ov3d_core.remap.cache import (  # noqa: F401
    CropEmbeddings,
    EmbeddingStore,
    TextEmbeddingCache,
    class_text_embeddings,
    hash_inputs,
)
from ov3d_core.remap.crops import FLAG_BEHIND, FLAG_INVALID, FLAG_OUTSIDE, crop_boxes, load_crops  # noqa: F401
from ov3d_core.remap.encoders import Encoder, HFEncoder, ProxyEncoder, make_encoder  # noqa: F401
from ov3d_core.remap.pipeline import LiveRemapper, embed_run, remapped_run  # noqa: F401
from ov3d_core.remap.sources import crop_source  # noqa: F401
from ov3d_core.remap.remap import (  # noqa: F401
    SCORE_MODES,
    Ranking,
    RemapResult,
    decide,
    rank,
    remap,
    remap_embeddings,
    similarities,
    to_label_view,
)
from ov3d_core.remap.templates import (  # noqa: F401
    BUILTIN_TEMPLATES,
    GROUPS,
    Template,
    ensemble,
    load_templates,
    prompts_for,
    resolve_templates,
)
