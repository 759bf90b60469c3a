"""The sections of a config that describe the data and the product's output: [data],
[forecast], [output] and [experiment]. The search's sections are in :mod:`autogp.config.search`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autogp.config.keys import ConfigError
from autogp.data.limits import MIN_POINTS
from autogp.setting import Spec, setting


@dataclass(frozen=True)
class DataConfig:
    """[data]: the input series and how to read it (see ``autogp.data.read_csv``)."""

    path: str | None = setting(None, "CSV file with the series", kind="str", optional=True)
    time_col: str = setting("ds", "column with time stamps (dates or numbers)")
    target_col: str = setting("y", "column with the values")
    id_col: str | None = setting(None, "series-id column of a panel", kind="str", optional=True)
    noise_col: str | None = setting(
        None, "column with each observation's known measurement-error standard deviation "
        "(data units), added to the learned noise", kind="str", optional=True)
    transform: str = setting(
        "auto",
        "variance-stabilising transform of y: 'auto' (log or Box-Cox when the training data's "
        "seasonal swing grows with the level, by Guerrero's method, and log for monthly and "
        "quarterly series of three seasons to 150 values; never for values <= 0), "
        "'none', 'log', 'boxcox' (lambda from data.boxcox_lambda or estimated), or "
        "'evidence' (fit a positive series in data and in log units, keep the fit with the "
        "higher evidence in data units; twice the cost)",
        kind="choice",
        choices=("auto", "none", "log", "boxcox", "evidence"),
    )
    boxcox_lambda: float | None = setting(
        None, "Box-Cox lambda for transform = 'boxcox' (unset: Guerrero's estimate)", kind="float",
        lo=-1.0, hi=2.0, optional=True,
    )
    log_transform: bool = setting(
        False, "fit log(y) (values must be positive); true is an alias of transform = 'log'",
    )
    center: str = setting(
        "recent",
        "prior mean of the model: 'recent', the mean of the series' last season (12 months, "
        "7 days, ...; else its last tenth), so that stationary parts of a forecast revert to "
        "the recent level; or 'mean', the whole series' mean (AutoGP.jl)",
        kind="choice",
        choices=("mean", "recent"),
    )
    covariate_lags: tuple[int, ...] = setting(
        (0,),
        "lags (steps of the series' grid) at which each covariate enters the model: [0] the "
        "covariate at the same time; [0, 1] also a copy one step back, named <column>_lag1 "
        "(distributed lags: y responds to this and last period's covariate). Training rows "
        "whose lags reach before the covariates' first row are left out of the fit (with a "
        "warning); 0 must be among them",
        kind="list", item=Spec("int", "", lo=0, hi=10_000),
    )
    strict: bool = setting(False, "missing/non-finite values are errors, not dropped")
    aggregate: str | None = setting(
        None,
        "how to combine rows with the same time stamp (unset: duplicates are an error)",
        kind="choice",
        choices=("mean", "sum", "last", "first", "median"),
        optional=True,
    )
    split_col: str | None = setting(
        None, "column marking held-out rows (e.g. 'split')", kind="str", optional=True
    )
    test_value: str = setting("test", "value of split_col that marks a test row")
    freq_col: str | None = setting(
        None,
        "column with each series' frequency (a pandas alias: YS, QS, MS, W, D, B, h, 30min); "
        "names the calendar of numeric time stamps (B: trading-day numbers) for the seasons",
        kind="str", optional=True,
    )
    window: int = setting(
        300,
        "fit on the most recent `window` training points of a longer series (0: all of them, "
        "with the sparse likelihood above smc.sparse_above points): a forecast depends on the "
        "recent past, and a fit's cost grows as n^3 (n m^2 sparse)", lo=0, hi=100_000_000,
    )
    window_seasons: int = setting(
        3,
        "cycles of the longest calendar season the window spans (0: off): hourly and finer "
        "series whose `window` recent points cover fewer cycles (300 half-hours are under a "
        "week) keep every k-th point of that span instead, `window` points in all, at most "
        "one in 8 of the shortest season's steps (see docs/long-series.md)", lo=0, hi=1000,
    )
    max_points: int = setting(
        5000, "largest series fitted with an exact GP (cost ~ n^3)", lo=3, hi=1_000_000
    )
    full_resolution: str = setting(
        "auto",
        "after the SMC on the window, re-fit the heaviest structures that have a state-space "
        "form on the last full_resolution_points training points at full resolution by the "
        "Kalman filter, reweight them by that exact likelihood and forecast from the filter: "
        "'auto' (series longer than the window and of at least full_resolution_from points), "
        "'on' (every series), 'off'",
        kind="choice", choices=("auto", "on", "off"),
    )
    full_resolution_from: int = setting(
        2000, "full_resolution = 'auto' takes series of at least this many training points "
        "(below it the window holds a sizeable share of the series, and the development "
        "panel, up to 1,342 points, keeps its fits)", lo=0, hi=100_000_000)
    full_resolution_points: int = setting(
        4000, "points of the full-resolution stage (the last ones; the whole series when "
        "shorter)", lo=MIN_POINTS, hi=10_000_000)
    full_resolution_structures: int = setting(
        3, "distinct structures (the heaviest) the full-resolution stage re-fits", lo=1, hi=64,
    )
    full_resolution_steps: int = setting(
        60, "Adam steps of the full-resolution re-fit (refine.learning_rate)", lo=0,
        hi=100_000)
    full_resolution_ge: str = setting(
        "M32",
        "on series the full-resolution stage takes, the grammar's GE prior weight goes to this "
        "atom, which has a state-space form (GE has none, so structures holding it would keep "
        "the window's fit); 'GE' keeps the grammar as it is",
        kind="choice", choices=("M32", "M12", "M52", "GE"),
    )
    full_resolution_dim: int = setting(
        64, "largest state dimension of a tree in the full-resolution stage (larger trees keep "
        "the window's fit); its cost per point grows as the square", lo=4, hi=512,
    )
    sep: str | None = setting(
        None,
        "CSV separator (unset: detected)",
        kind="choice",
        choices=(",", ";", "\t", "|"),
        optional=True,
    )

    @property
    def effective_transform(self) -> str:
        """``transform``, with ``log_transform = true`` read as ``"log"``."""
        return "log" if self.log_transform else self.transform

    def validate(self, prefix: str) -> None:
        if 0 < self.window < MIN_POINTS:
            raise ConfigError(
                f"{prefix}.window = {self.window} leaves too little to fit: use 0 (all points) "
                f"or at least {MIN_POINTS}",
                key=f"{prefix}.window",
            )
        if self.log_transform and self.transform not in ("auto", "log"):
            raise ConfigError(
                f"{prefix}.log_transform = true contradicts {prefix}.transform = "
                f"{self.transform!r}; set only one of them",
                key=f"{prefix}.log_transform",
            )
        lags = list(self.covariate_lags)
        if 0 not in lags or len(set(lags)) < len(lags):
            # With lag 0 the training rows hold each covariate's history up to the last row,
            # which the first forecast steps' lags read; the SMC leaves it out where it does
            # not help.
            raise ConfigError(
                f"{prefix}.covariate_lags = {lags}: give each lag once, 0 among them ([0]: the "
                "covariates at the same time only; [0, 1]: and one step back)",
                key=f"{prefix}.covariate_lags")
        if self.boxcox_lambda is not None and self.effective_transform != "boxcox":
            raise ConfigError(
                f"{prefix}.boxcox_lambda = {self.boxcox_lambda:g} is only used with "
                f"{prefix}.transform = 'boxcox' (transform is {self.effective_transform!r})",
                key=f"{prefix}.boxcox_lambda",
            )

    def read_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``autogp.data.read_csv(self.path, **kwargs)``."""
        return {
            "time_col": self.time_col,
            "target_col": self.target_col,
            "id_col": self.id_col,
            "noise_col": self.noise_col,
            "strict": self.strict,
            "aggregate": self.aggregate,
            "sep": self.sep,
            "max_points": self.max_points,
            "split_col": self.split_col,
            "test_value": self.test_value,
        }


@dataclass(frozen=True)
class ForecastConfig:
    """[forecast]: what to predict."""

    horizon: int = setting(
        12, "steps ahead on the data's grid (0: fit only)", lo=0, hi=1_000_000
    )
    levels: tuple[float, ...] = setting(
        (80.0, 95.0),
        "central prediction-interval levels in percent",
        kind="list",
        item=Spec("float", "", lo=0.0, hi=100.0, lo_open=True, hi_open=True),
    )
    quantiles: tuple[float, ...] | None = setting(
        None,
        "extra quantiles to report, e.g. [0.1, 0.5, 0.9]",
        kind="list",
        item=Spec("float", "", lo=0.0, hi=1.0, lo_open=True, hi_open=True),
        optional=True,
    )
    observation_noise: bool = setting(
        True, "intervals for new observations (true) or for the latent function (false)"
    )
    point: str = setting(
        "mean",
        "point forecast: the predictive mean, or the median (best under absolute-error metrics "
        "such as MASE and sMAPE; below the mean under a log or Box-Cox transform)",
        kind="choice",
        choices=("mean", "median"),
    )

    def validate(self, prefix: str) -> None:
        for name in ("levels", "quantiles"):
            vals = getattr(self, name)
            if vals is not None and len(set(vals)) != len(vals):
                raise ConfigError(
                    f"{prefix}.{name} = {list(vals)} has repeated values", key=f"{prefix}.{name}"
                )


@dataclass(frozen=True)
class OutputConfig:
    """[output]: files written by a fit, inside ``dir``; ``false`` or "" turns one off."""

    dir: str = setting("autogp_out", "output directory")
    forecast: str | None = setting("forecast.csv", "forecast table", optional=True)
    plot: str | None = setting("forecast.png", "forecast plot", optional=True)
    model: str | None = setting("model.autogp", "fitted model (structures, parameters)",
                             optional=True)  # fmt: skip


@dataclass(frozen=True)
class ExperimentConfig:
    """[experiment]: a named benchmark run."""

    name: str | None = setting(
        None, "experiment name (used in result files)", kind="str", optional=True)
    metrics: tuple[str, ...] = setting(
        ("smape", "mase", "coverage"), "metrics to report", kind="list", item=Spec("str", "")
    )
    parts: tuple[str, ...] = setting(
        (),
        "config files (relative to this one) run one after another as the parts of this "
        "experiment, each into output.dir/<its experiment.name>, with an overall report; "
        "command-line options apply to every part",
        kind="list", item=Spec("str", ""),
    )
    group_col: str | None = setting(
        None, "column that selects this experiment's series (with group_value)", kind="str",
        optional=True,
    )
    group_value: str | None = setting(
        None, "value of group_col whose series are fitted (e.g. 'QS')", kind="str",
        optional=True,
    )
    baselines: str | None = setting(
        None,
        "CSV of baseline forecasts on the same split (unique_id, ds, <Model>, <Model>-lo-<L>, "
        "<Model>-hi-<L>; relative to this file), scored instead of fitting statsforecast",
        kind="str", optional=True,
    )
    reference: str | None = setting(
        None,
        "CSV of published results (experiment, model, metric, value, source; relative to this "
        "file): the rows of this experiment.name are quoted in the report, labelled published",
        kind="str", optional=True,
    )

    def validate(self, prefix: str) -> None:
        if not self.metrics or any(not m.strip() for m in self.metrics):
            raise ConfigError(
                f"{prefix}.metrics = {list(self.metrics)} must be a non-empty list of names",
                key=f"{prefix}.metrics",
            )
        if (self.group_col is None) != (self.group_value is None):
            given, missing = (
                ("group_col", "group_value") if self.group_value is None
                else ("group_value", "group_col")
            )
            raise ConfigError(
                f"{prefix}.{given} is set but {prefix}.{missing} is not: set both or neither",
                key=f"{prefix}.{missing}",
            )


__all__ = ["DataConfig", "ExperimentConfig", "ForecastConfig", "OutputConfig"]
