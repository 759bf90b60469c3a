"""autogp inside other forecasting libraries, each from its own module (nothing is imported here,
so ``import autogp`` never needs them):

* :mod:`autogp.integrations.statsforecast`: :class:`~autogp.integrations.statsforecast.AutoGP`,
  a model that ``statsforecast.StatsForecast`` runs beside its own (``pip install
  "autogp[bench]"``);
* :mod:`autogp.integrations.arrays`: what that model computes, statsforecast's arrays in and
  dicts out, through autogp's own :class:`autogp.AutoGP`;
* :mod:`autogp.integrations.forksafe`: running that work safely in a process forked from one
  whose JAX runtime was running (statsforecast's ``n_jobs``).
"""
