"""Experiments from a config file, a user feature: ``autogp run CONFIG`` fits a panel on its
training rows, scores the held-out rows and, when statsforecast is installed, fits its models
on the same split beside autogp, then writes a report. (Tools that tune autogp itself live in
the repository's ``lab/``, outside the package.)

* :mod:`~autogp.experiments.runner`: the experiment a config file describes.
* :mod:`~autogp.experiments.sampling`: ``--limit N``, a stratified sample of the series.
* :mod:`~autogp.experiments.series_scores`: one fitted series scored on its held-out points.
* :mod:`~autogp.experiments.scoring`: panel scores of forecast frames (sMAPE, MASE, scaled CRPS,
  coverage, width) and the exact CRPS of the particle mixtures.
* :mod:`~autogp.experiments.baselines`: statsforecast's AutoETS, AutoARIMA, AutoTheta, ...
* :mod:`~autogp.experiments.comparison`: AutoGP against the baselines on the same split.
* :mod:`~autogp.experiments.report`: the files and tables an experiment leaves behind.
* :mod:`~autogp.experiments.markdown`: ``report.md``, an experiment's scores beside the
  baselines' and the published ones.
* :mod:`~autogp.experiments.figures`: the report's figures (scores by group with bootstrap
  intervals, the series AutoGP did worst and best on, structure families), from its tables.
* :mod:`~autogp.experiments.published`: published results quoted in a report.
* :mod:`~autogp.experiments.parts`: an experiment made of parts (``experiment.parts``: all of M3).
"""

from autogp.experiments.parts import run_experiment
from autogp.experiments.runner import SUPPORTED_METRICS, resolve_data_path
from autogp.experiments.sampling import stratified_sample

__all__ = ["SUPPORTED_METRICS", "resolve_data_path", "run_experiment", "stratified_sample"]
