"""One series from its data to a stored posterior: the layer below both the panel machinery
(:mod:`autogp.parallel`) and the estimator (:mod:`autogp.forecast`).

* :mod:`~autogp.pipeline.fitting`: one series and a config in, its :class:`Posterior` out
  (random key, normalisation, window, candidate periods, the SMC run);
* :mod:`~autogp.pipeline.saveload`: the ``.autogp`` file of a configuration and its posteriors
  (a zip of JSON and ``.npy`` arrays, no pickle), used by model files and resumable runs alike;
* :mod:`~autogp.pipeline.atomic`: file writes that a reader never sees half done.
"""

from autogp.inference.posterior import Posterior
from autogp.pipeline.atomic import atomic_path, atomic_write, atomic_write_text
from autogp.pipeline.fitting import fit_series_posterior, series_key
from autogp.pipeline.saveload import FORMAT_VERSION, ModelFileError, load_model, save_model

__all__ = [
    "FORMAT_VERSION",
    "ModelFileError",
    "Posterior",
    "atomic_path",
    "atomic_write",
    "atomic_write_text",
    "fit_series_posterior",
    "load_model",
    "save_model",
    "series_key",
]
