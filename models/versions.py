"""What a set of weights was trained on, kept apart from training so that scoring never imports torch.

``versions()`` names every version that defines the network's input; the weights store it
(:class:`models.checkpoint.Checkpoint`) and :meth:`models.runtime.RewardModel.load` refuses weights whose versions
differ from the code's. ``mahalanobis`` is the out-of-distribution distance, fitted in :mod:`models.train` and
measured at scoring time.
"""

from __future__ import annotations

import numpy as np

from gui_app.training.sprite import POINTER_VERSION
from models import hashing, terms, text
from models.features import FEATURE_VERSION
from models.perception import PERCEPTION_VERSION
from models.pointer import POINTER_FEATURE_VERSION


def versions() -> dict[str, int]:
    """Every version that defines what the network is given; stored in the weights and checked at load.

    ``pointer`` is the detector's input scaling and heatmap; ``sprite`` the arrow Rollscope's recorders draw on the
    recordings the weights learnt from (:mod:`gui_app.training.sprite`): the pointer features were fitted to it, so
    weights trained under another sprite are refused like any other version, and a new sprite means retraining.
    """
    return {"feature": FEATURE_VERSION, "perception": PERCEPTION_VERSION, "terms": terms.TERMS_VERSION,
            "hashing": hashing.HASHING_VERSION, "text": text.TEXT_FEATURE_VERSION, "pointer": POINTER_FEATURE_VERSION,
            "sprite": POINTER_VERSION}


def mahalanobis(vecs: np.ndarray, mu: np.ndarray, sd: np.ndarray, prec: np.ndarray) -> np.ndarray:
    """Distance of each row of ``vecs`` from the reference (mean ``mu``, scale ``sd``, precision ``prec``)."""
    z = (vecs - mu) / sd
    return np.sqrt(np.maximum(0.0, np.einsum("ni,ij,nj->n", z, prec, z)))
