"""What a set of weights was trained on, kept apart from training so that scoring never imports torch.

``versions()`` names every version that defines the network's input; the weights store it and
:meth:`models.runtime.RewardModel.load` refuses weights whose versions differ from the code's. ``mahalanobis`` is
the out-of-distribution distance, fitted in :mod:`models.train` and measured at scoring time.
"""

from __future__ import annotations

import numpy as np

from models import hashing, terms, text
from models.features import FEATURE_VERSION
from models.perception import PERCEPTION_VERSION
from models.pointer import POINTER_FEATURE_VERSION


def versions() -> dict[str, int]:
    """Every version that defines what the network is given; stored in the weights and checked at load."""
    return {"feature": FEATURE_VERSION, "perception": PERCEPTION_VERSION, "terms": terms.TERMS_VERSION,
            "hashing": hashing.HASHING_VERSION, "text": text.TEXT_FEATURE_VERSION, "pointer": POINTER_FEATURE_VERSION}


def mahalanobis(vecs: np.ndarray, mu: np.ndarray, sd: np.ndarray, prec: np.ndarray) -> np.ndarray:
    """Distance of each row of ``vecs`` from the reference (mean ``mu``, scale ``sd``, precision ``prec``)."""
    z = (vecs - mu) / sd
    return np.sqrt(np.maximum(0.0, np.einsum("ni,ij,nj->n", z, prec, z)))
