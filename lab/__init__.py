"""The lab: tools that tune and probe autogp itself, kept out of the installed package.

Nothing here is installed with autogp (``pyproject.toml`` packages ``autogp*`` only); it
imports autogp like any user code and runs from a checkout:

* ``choose_defaults.py``: candidate settings scored on rolling-origin windows inside the
  training data (how the defaults were chosen).
* ``seed_spread.py``: one experiment config under several seeds.
* :mod:`lab.greedy` and :mod:`lab.mcmc`: baselines for the SMC structure search (a greedy BIC
  search, independent MCMC chains).
"""
