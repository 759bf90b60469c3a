"""Plots of fitted models: the public name of :mod:`autogp.forecast.plots` (matplotlib is
imported only when this module is)::

    from autogp import plots
    fig = plots.plot_forecast(model, model.predict(18))
    plots.save_figure(fig, "forecast.png")
"""

from autogp.forecast.plots import plot_components, plot_forecast, plot_structures, save_figure

__all__ = ["plot_components", "plot_forecast", "plot_structures", "save_figure"]
