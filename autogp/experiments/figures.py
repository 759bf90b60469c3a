"""The figures of an experiment's report, drawn from its tables.

Each ``plot_*`` function takes the frames a run already has and returns a matplotlib
``Figure`` (Agg canvas, no pyplot state), so they work on small synthetic frames as well:

* :func:`plot_metric_by_group`: each model's mean score per group of series (an M3 group, a
  forecast step) as bars, with percentile bootstrap intervals over the series
  (:func:`bootstrap_interval`, a seeded numpy ``Generator``);
* :func:`plot_lost_and_won`: the series where AutoGP lost and won most against the best
  baseline on that series (:func:`lost_and_won`: the largest and smallest ratio of their
  MASE), each with its history, held-out points, AutoGP's forecast and intervals and that
  baseline's forecast;
* :func:`plot_families`: how often each structure family heads the posterior
  (:func:`family_of`: the set of atoms of the heaviest structure, so ``LIN + GE`` and
  ``GE + LIN`` are one family).

:func:`write_experiment_figures` writes those an experiment can draw into its output folder
(atomically, as PNG) and says why it left any out; ``report.md`` links them.

Frames: ``scores`` has one row a series and model (``unique_id``, ``model``, ``mase``,
``scaled_crps``, ...: :func:`~autogp.experiments.scoring.score_forecasts`) and optionally a
group column; ``train`` is ``unique_id, ds, y``; ``forecast`` AutoGP's held-out forecasts
(``unique_id, ds, y, AutoGP, AutoGP-lo-<L>, AutoGP-hi-<L>``); ``baselines`` the baselines'
forecasts on the same rows (``unique_id, ds, <model>, ...``); ``structures`` the structure
table (``unique_id, structure, weight``).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib import dates as mdates
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from autogp.forecast.columns import MODEL_NAME, interval_columns, level_label
from autogp.forecast.plots import save_figure
from autogp.kernels import leaves, parse, spec

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# metric: (name, what its unit is), for axis labels.
METRICS = {
    "mase": ("MASE", "error ÷ naive error"),
    "scaled_crps": ("scaled CRPS", "CRPS ÷ mean |y|"),
    "smape": ("sMAPE", "percent"),
}
GROUP_COL = "group"
# The figures' file names in an experiment's output folder.
METRIC_FIGURE = "metric_by_group.png"
LOST_WON_FIGURE = "lost_and_won.png"
FAMILY_FIGURE = "structure_families.png"
_BLOCK_ELEMENTS = 4_000_000  # resampled values drawn at once by bootstrap_interval


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


# The colour of each model in every figure (AutoGP blue, as in the forecast plots); other
# models get the remaining colours in turn.
KNOWN_COLORS = {MODEL_NAME: "C0", "AutoETS": "C1", "AutoARIMA": "C2", "AutoTheta": "C3",
                "SeasonalNaive": "C4"}


def model_colors(models: Sequence[str]) -> dict[str, str]:
    """A colour per model: the same for a model of :data:`KNOWN_COLORS` in every figure, the
    unused ones in turn for the others."""
    free = iter(c for c in (f"C{i}" for i in range(10)) if c not in KNOWN_COLORS.values())
    return {m: KNOWN_COLORS.get(m) or next(free, "0.4") for m in models}


def _ordered_models(models: Sequence[str]) -> list[str]:
    unique = list(dict.fromkeys(str(m) for m in models))
    return sorted(unique, key=lambda m: m != MODEL_NAME)  # AutoGP first, the rest in order


# ---- metric by group -------------------------------------------------------------------------
def bootstrap_interval(
    values: Sequence[float] | np.ndarray, *, seed: int = 0, n_boot: int = 2000,
    level: float = 95.0,
) -> tuple[float, float, float]:
    """The mean of the finite ``values`` and its ``level``% percentile bootstrap interval:
    ``n_boot`` resamples (with replacement, as many as there are values) drawn by
    ``np.random.default_rng(seed).integers(0, n, size=(n_boot, n))``, the percentiles
    ``(100 - level) / 2`` and ``(100 + level) / 2`` of their means. NaNs when no value is
    finite."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMENTS // v.size)
    means = np.concatenate([
        v[rng.integers(0, v.size, size=(min(block, n_boot - start), v.size))].mean(axis=1)
        for start in range(0, n_boot, block)
    ])
    tail = (100.0 - level) / 2.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(v.mean()), float(lo), float(hi)


def metric_intervals(
    scores: pd.DataFrame, metrics: Sequence[str], *, group_col: str = GROUP_COL,
    seed: int = 0, n_boot: int = 2000, level: float = 95.0,
) -> pd.DataFrame:
    """One row a group, model and metric: ``mean``, ``lo``, ``hi`` (:func:`bootstrap_interval`
    over the group's series, each cell with the same ``seed``) and ``series`` (finite values).
    Without ``group_col`` every series is one group, ``all series``. Groups keep their order
    of first appearance (numbers, such as forecast steps, are sorted), models too, AutoGP
    first."""
    frame = scores if group_col in scores else scores.assign(**{group_col: "all series"})
    rows = []
    groups = list(pd.unique(frame[group_col]))
    if all(_is_number(g) for g in groups):
        groups = sorted(groups)
    for group in groups:
        part = frame[frame[group_col] == group]
        for model in _ordered_models(part["model"]):
            values = part.loc[part["model"] == model]
            for metric in metrics:
                x = values[metric].to_numpy(dtype=np.float64)
                mean, lo, hi = bootstrap_interval(x, seed=seed, n_boot=n_boot, level=level)
                rows.append({"group": group, "model": model, "metric": metric, "mean": mean,
                             "lo": lo, "hi": hi, "series": int(np.isfinite(x).sum())})
    return pd.DataFrame(rows, columns=["group", "model", "metric", "mean", "lo", "hi",
                                       "series"])


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating)


def plot_metric_by_group(
    scores: pd.DataFrame,
    metrics: Sequence[str] = ("mase", "scaled_crps"),
    *,
    group_col: str = GROUP_COL,
    group_label: str = "group of series",
    seed: int = 0,
    n_boot: int = 2000,
    level: float = 95.0,
    over: str = "series",
    title: str | None = None,
) -> Figure:
    """Each model's mean ``metrics`` per group as bars, one panel a metric, with
    :func:`bootstrap_interval` error bars over the group's series (the same seed for every
    model, so models scored on the same series get the same resamples; ``over`` names what a
    row is, for the title).
    A legend names each model; the group axis says how many series each group has (groups
    that are numbers, such as forecast steps, are labelled by the number alone, and only
    every k-th when there are many)."""
    metrics = [m for m in metrics if m in scores.columns]
    if not metrics:
        raise ValueError(f"the scores have none of the metrics (columns: {list(scores.columns)})")
    table = metric_intervals(scores, metrics, group_col=group_col, seed=seed, n_boot=n_boot,
                             level=level)
    groups = list(pd.unique(table["group"]))
    models = _ordered_models(table["model"])
    colors = model_colors(models)
    counts = (scores.groupby(group_col)["unique_id"].nunique() if group_col in scores
              else pd.Series({"all series": scores["unique_id"].nunique()}))
    numeric = all(_is_number(g) for g in groups)
    width = min(14.0, max(7.0, 3.0 + 0.22 * len(groups) * len(models)))
    fig = _figure(width, 0.8 + 2.6 * len(metrics))
    axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
    bar = 0.8 / len(models)
    x = np.arange(len(groups))
    for ax, metric in zip(axes, metrics, strict=True):
        rows = table[table["metric"] == metric].set_index(["group", "model"])
        for j, model in enumerate(models):
            cells = [rows.loc[(g, model)] if (g, model) in rows.index else None for g in groups]
            mean = np.array([c["mean"] if c is not None else np.nan for c in cells])
            lo = np.array([c["lo"] if c is not None else np.nan for c in cells])
            hi = np.array([c["hi"] if c is not None else np.nan for c in cells])
            ax.bar(x - 0.4 + bar * (j + 0.5), mean, bar, color=colors[model], label=model,
                   yerr=np.vstack([mean - lo, hi - mean]), capsize=2 if bar > 0.05 else 0,
                   error_kw={"linewidth": 0.8, "ecolor": "0.2"})
        name, unit = METRICS.get(metric, (metric, "no unit"))
        ax.set_ylabel(f"mean {name}\n({unit})", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        step = max(1, math.ceil(len(groups) / 12))
        labels = [str(g) if numeric else f"{g}\n({counts.get(g, 0)} series)" for g in groups]
        ax.set_xticks(x[::step], labels[::step], fontsize=8 if not numeric else 9)
        ax.set_xlim(-0.6, len(groups) - 0.4)
    axes[-1].set_xlabel(group_label)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize=9,
               title="model", title_fontsize=9)
    axes[0].set_title(title or f"Mean over the series, with {level:g}% bootstrap intervals\n"
                      f"({n_boot} resamples of the {over})", fontsize=10)
    return fig


# ---- where AutoGP lost and won most ----------------------------------------------------------
def lost_and_won(scores: pd.DataFrame, *, metric: str = "mase", k: int = 3) -> pd.DataFrame:
    """The ``k`` series where AutoGP's ``metric`` is largest against the best baseline's on the
    same series (``kind = "lost"``, largest ratio first) and the ``k`` where it is smallest
    (``"won"``, smallest first), from per-series ``scores`` of AutoGP and the baselines; no
    series is in both. Columns ``unique_id, kind, baseline`` (the best baseline there),
    ``autogp, best`` (the two values) and ``ratio``. Empty without baselines; series where a
    value is missing or the best baseline's is 0 are left out."""
    columns = ["unique_id", "kind", "baseline", "autogp", "best", "ratio"]
    wide = scores.drop_duplicates(["unique_id", "model"]).pivot(
        index="unique_id", columns="model", values=metric)
    others = [m for m in wide.columns if m != MODEL_NAME]
    if MODEL_NAME not in wide.columns or not others:
        return pd.DataFrame(columns=columns)
    wide = wide[wide[MODEL_NAME].notna() & wide[others].notna().any(axis=1)]
    base = wide[others]
    frame = pd.DataFrame({"autogp": wide[MODEL_NAME], "best": base.min(axis=1),
                          "baseline": base.idxmin(axis=1)})
    frame = frame[np.isfinite(frame["autogp"]) & np.isfinite(frame["best"])
                  & (frame["best"] > 0)]
    frame = frame.assign(ratio=frame["autogp"] / frame["best"]).sort_values("ratio",
                                                                             kind="stable")
    n_lost = min(k, math.ceil(len(frame) / 2))
    lost = frame.iloc[::-1].head(n_lost).assign(kind="lost")
    won = frame.drop(lost.index).head(min(k, len(frame) - n_lost)).assign(kind="won")
    out = pd.concat([lost, won]).rename_axis("unique_id").reset_index()
    return out[columns].reset_index(drop=True)


def _time_values(ds: pd.Series) -> pd.Series:
    """Time stamps as dates or numbers (a CSV read back gives them as text)."""
    if pd.api.types.is_numeric_dtype(ds) or pd.api.types.is_datetime64_any_dtype(ds):
        return ds
    try:
        return pd.to_numeric(ds)
    except (TypeError, ValueError):
        return pd.to_datetime(ds, format="mixed")


def _rows(frame: pd.DataFrame, uid: Any) -> pd.DataFrame:
    part = frame[frame["unique_id"].astype(str) == str(uid)]
    return part.assign(ds=_time_values(part["ds"])).sort_values("ds", kind="stable")


def _time_axis(ax: Axes, dated: bool, maxticks: int = 5) -> None:
    """Concise date labels on a date axis, a few whole numbers on a numeric one."""
    if dated:
        locator = mdates.AutoDateLocator(minticks=2, maxticks=maxticks)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=maxticks, integer=True))


def _intervals_to_draw(columns: Sequence[str], wanted: Sequence[float]) -> list[float]:
    """The levels of ``wanted`` whose AutoGP interval columns are there, widest first."""
    have = [lv for lv in wanted if all(c in columns for c in interval_columns(MODEL_NAME, lv))]
    return sorted(have, reverse=True)


def _time_label(dated: Sequence[bool]) -> str:
    if all(dated):
        return "date"
    if not any(dated):
        return "time step (the series' own unit: a year, a quarter, ...)"
    return "time (date, or time step)"


def _legend_rank(label: str) -> int:
    """The data first, then AutoGP and its intervals, then the baselines (a stable sort keeps
    the order within each)."""
    first = ["history", "held out", MODEL_NAME]
    if label in first:
        return first.index(label)
    return len(first) + (not label.startswith(MODEL_NAME))


def plot_lost_and_won(
    chosen: pd.DataFrame,
    train: pd.DataFrame,
    forecast: pd.DataFrame,
    baselines: pd.DataFrame,
    *,
    metric: str = "mase",
    levels: Sequence[float] = (80, 95),
    history: int | None = None,
    title: str | None = None,
) -> Figure:
    """Small multiples of the series of ``chosen`` (:func:`lost_and_won`): a row for the
    series AutoGP lost most on, a row for those it won most on. Each panel has the series'
    last ``history`` training points (default: four horizons, at least 24), the held-out
    points, AutoGP's point forecast and its ``levels`` intervals, and the forecast of the
    best baseline on that series; its title gives both scores. One legend names every line."""
    if chosen.empty:
        raise ValueError("no series to draw: the run has no baselines to compare with")
    kinds = [k for k in ("lost", "won") if (chosen["kind"] == k).any()]
    cols = int(max((chosen["kind"] == k).sum() for k in kinds))
    fig = _figure(max(7.0, 3.9 * cols), 0.9 + 2.9 * len(kinds))
    axes = fig.subplots(len(kinds), cols, squeeze=False)
    baseline_names = list(dict.fromkeys(chosen["baseline"].astype(str)))
    colors = model_colors([MODEL_NAME, *baseline_names])
    name = METRICS.get(metric, (metric, ""))[0]
    dated = []
    for r, kind in enumerate(kinds):
        rows = chosen[chosen["kind"] == kind].reset_index(drop=True)
        for c in range(cols):
            ax = axes[r, c]
            if c >= len(rows):
                ax.set_visible(False)
                continue
            row = rows.iloc[c]
            uid, baseline = row["unique_id"], str(row["baseline"])
            fc, past = _rows(forecast, uid), _rows(train, uid)
            base = _rows(baselines, uid)
            shown = history or max(4 * len(fc), 24)
            past = past.tail(shown)
            dated.append(pd.api.types.is_datetime64_any_dtype(past["ds"]))
            ax.plot(past["ds"], past["y"], color="black", linewidth=1, label="history")
            for alpha, lv in zip((0.15, 0.3), _intervals_to_draw(fc.columns, levels),
                                 strict=False):
                lo, hi = interval_columns(MODEL_NAME, lv)
                ax.fill_between(fc["ds"], fc[lo], fc[hi], color=colors[MODEL_NAME],
                                alpha=alpha, linewidth=0,
                                label=f"{MODEL_NAME} {level_label(lv)}% interval")
            ax.plot(fc["ds"], fc[MODEL_NAME], color=colors[MODEL_NAME], linewidth=1.5,
                    label=MODEL_NAME)
            if baseline in base.columns:
                ax.plot(base["ds"], base[baseline], color=colors[baseline], linewidth=1.5,
                        linestyle="--", label=baseline)
            if "y" in fc.columns:
                ax.plot(fc["ds"], fc["y"], "x", color="black", markersize=4,
                        label="held out")
            role = "worst" if kind == "lost" else "best"
            ax.set_title(f"{role} for AutoGP: {uid}\n{name}: AutoGP {row['autogp']:.2f}, "
                         f"{baseline} {row['best']:.2f}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=8)
            _time_axis(ax, dated[-1], maxticks=4)
    fig.supxlabel(_time_label(dated), fontsize=9)
    fig.supylabel("value (each series in its own units)", fontsize=9)
    handles: dict[str, Any] = {}
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    handles = dict(sorted(handles.items(), key=lambda item: _legend_rank(item[0])))
    fig.legend(handles.values(), handles.keys(), loc="outside right center", fontsize=8)
    fig.suptitle(title or f"The series where AutoGP did worst and best: its {name} over that "
                 "of the best baseline on the series", fontsize=10)
    return fig


# ---- structure families ----------------------------------------------------------------------
def family_of(structure: str) -> str:
    """The family of a structure: its atoms without repeats, in the grammar's order, so
    ``LIN + GE``, ``GE + LIN`` and ``GE * LIN + GE`` are all ``LIN, GE`` (change points and
    operators are not atoms). Covariate atoms keep their covariate (``LIN[temp]``)."""
    covariates = list(dict.fromkeys(re.findall(r"\[([^\]]+)\]", structure)))
    names = []
    for leaf in leaves(parse(structure, covariates)):
        name = spec.NAMES[leaf.opcode]
        m = re.fullmatch(r"(\w+)\[(\d+)\]", name)
        if m and 0 < int(m.group(2)) <= len(covariates):
            name = f"{m.group(1)}[{covariates[int(m.group(2)) - 1]}]"
        names.append((leaf.opcode, name))
    return ", ".join(name for _, name in sorted(set(names)))


def structure_families(structures: pd.DataFrame, *, group_col: str = GROUP_COL
                       ) -> pd.DataFrame:
    """One row a series: its heaviest structure (``structure``, ``weight``), its
    ``family`` (:func:`family_of`) and, when ``structures`` has it, its group."""
    keep = ["unique_id", *([group_col] if group_col in structures else []), "structure",
            "weight"]
    order = structures.sort_values("weight", ascending=False, kind="stable")
    top = order.drop_duplicates("unique_id").sort_index()[keep]  # series in their order
    families = {s: family_of(s) for s in pd.unique(top["structure"])}
    return top.assign(family=top["structure"].map(families)).reset_index(drop=True)


def plot_families(
    families: pd.DataFrame, *, group_col: str = GROUP_COL, top: int = 12,
    title: str | None = None,
) -> Figure:
    """How many series each structure family heads the posterior of (from
    :func:`structure_families`): horizontal bars, most frequent on top, the ``top`` most
    frequent families and the rest as one bar; stacked by group, which the legend names."""
    frame = families if group_col in families else families.assign(**{group_col: "all series"})
    counts = frame.groupby(["family", group_col], sort=False).size().unstack(fill_value=0)
    groups = list(pd.unique(frame[group_col]))
    counts = counts[groups]
    order = counts.sum(axis=1).sort_values(ascending=False, kind="stable")
    shown = list(order.index[:top])
    if len(order) > top:
        rest = counts.loc[order.index[top:]].sum()
        counts = pd.concat([counts.loc[shown],
                            rest.to_frame(f"{len(order) - top} other families").T])
    else:
        counts = counts.loc[shown]
    counts = counts.iloc[::-1]  # most frequent at the top
    fig = _figure(9, max(3.0, 1.6 + 0.32 * len(counts)))
    ax = fig.subplots()
    left = np.zeros(len(counts))
    y = np.arange(len(counts))
    # Shades of AutoGP's blue, one a group: every bar is AutoGP's, unlike the models' colours.
    shades = colormaps["Blues"](np.linspace(0.9, 0.35, len(groups)))
    for shade, group in zip(shades, groups, strict=True):
        ax.barh(y, counts[group], left=left, color=shade, label=str(group))
        left += counts[group].to_numpy()
    ax.set_yticks(y, list(counts.index), fontsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("series whose heaviest structure has these atoms (count)")
    ax.set_ylabel("structure family (its atoms)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    fig.legend(title="group", fontsize=8, title_fontsize=8, loc="outside right upper")
    ax.set_title(title or f"The family of the heaviest structure, {len(frame)} series",
                 fontsize=10)
    return fig


# ---- cross-validation ------------------------------------------------------------------------
def cv_figure_path(metrics_path: str | Path) -> Path:
    """Where ``autogp cv --metrics FILE`` puts its figure: beside FILE, ``<stem>_by_step.png``."""
    path = Path(metrics_path)
    return path.with_name(f"{path.stem}_by_step.png")


def plot_cv_scores(window_scores: pd.DataFrame, metrics: Sequence[str] = ("mase", "scaled_crps"),
                   *, seed: int = 0) -> Figure:
    """Each model's mean score per forecast step of a cross-validation, with bootstrap
    intervals over the windows (from
    :func:`~autogp.experiments.cv_scores.cross_validation_window_scores`)."""
    steps = window_scores[window_scores["step"] != "all"]
    if steps.empty:
        raise ValueError("no window has a held-out value to score")
    return plot_metric_by_group(steps.assign(step=steps["step"].astype(int)), metrics,
                                group_col="step", over="windows", seed=seed,
                                group_label="forecast step (steps after the cutoff)")


# ---- an experiment's figures -----------------------------------------------------------------
@dataclass
class Figures:
    """The figures written for a report: ``(file name, caption)`` each, and a sentence for
    each figure left out, saying why."""

    written: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """For ``summary.json``: ``{"figures": [{"file", "caption"}], "figure_notes": [...]}``."""
        return {"figures": [{"file": f, "caption": c} for f, c in self.written],
                "figure_notes": list(self.notes)}


def _metric_caption(metrics: Sequence[str], grouped: bool) -> str:
    names = " and ".join(METRICS[m][0] for m in metrics)
    per = "per group and model" if grouped else "per model"
    return f"mean {names} {per}, with 95% bootstrap intervals over the series"


def write_experiment_figures(
    directory: str | Path,
    *,
    scores: pd.DataFrame | None,
    structures: pd.DataFrame | None,
    train: pd.DataFrame | None = None,
    forecast: pd.DataFrame | None = None,
    baselines: pd.DataFrame | None = None,
    group_col: str = GROUP_COL,
    group_label: str = "group of series",
    seed: int = 0,
    series_figure: bool = True,
) -> Figures:
    """Write the figures the tables allow into ``directory`` (:data:`METRIC_FIGURE`,
    :data:`LOST_WON_FIGURE`, :data:`FAMILY_FIGURE`, atomically); a figure the tables cannot
    give (no held-out points, no baselines) is left out with a note saying why. A figure that
    fails to draw is a note and a warning too: the run's other outputs are still written.
    ``series_figure=False``: no figure of single series (nor a note), for the overall report
    of an experiment made of parts, whose parts draw their own."""
    directory = Path(directory)
    out = Figures()

    def draw(name: str, caption: str, make: Callable[[], Figure]) -> None:
        try:
            save_figure(make(), directory / name)
        except Exception as exc:  # a report without a figure beats no report
            message = f"{name} could not be drawn: {type(exc).__name__}: {exc}"
            warnings.warn(message, RuntimeWarning, stacklevel=3)
            out.notes.append(message + ".")
            return
        out.written.append((name, caption))

    if scores is None or not len(scores):
        out.notes.append("No figure of the scores: no series has held-out points to score.")
    else:
        table = scores
        metrics = [m for m in ("mase", "scaled_crps") if m in table.columns]
        draw(METRIC_FIGURE, _metric_caption(metrics, group_col in table),
             lambda: plot_metric_by_group(table, metrics, group_col=group_col,
                                          group_label=group_label, seed=seed))
        chosen = lost_and_won(table) if baselines is not None else None
        lost_won = "No figure of the series AutoGP lost and won most: "
        if not series_figure:
            pass
        elif chosen is None or set(table["model"]) <= {MODEL_NAME}:
            out.notes.append(lost_won + "the run has no baselines to compare with (run with "
                             "--baselines, or name a file in experiment.baselines).")
        elif chosen.empty or train is None or forecast is None:
            out.notes.append(lost_won + "no series has a finite MASE for AutoGP and a baseline.")
        else:
            past, fc, base = train, forecast, baselines
            draw(LOST_WON_FIGURE, "the series where AutoGP lost and won most (its MASE over "
                 "the best baseline's on the series)",
                 lambda: plot_lost_and_won(chosen, past, fc, base))
    if structures is not None and len(structures):
        draw(FAMILY_FIGURE, "how often each structure family (the atoms of the heaviest "
             "structure) heads the posterior",
             lambda: plot_families(structure_families(structures, group_col=group_col),
                                   group_col=group_col))
    return out


__all__ = [
    "FAMILY_FIGURE",
    "GROUP_COL",
    "KNOWN_COLORS",
    "LOST_WON_FIGURE",
    "METRICS",
    "METRIC_FIGURE",
    "Figures",
    "bootstrap_interval",
    "cv_figure_path",
    "family_of",
    "lost_and_won",
    "metric_intervals",
    "model_colors",
    "plot_families",
    "plot_cv_scores",
    "plot_lost_and_won",
    "plot_metric_by_group",
    "structure_families",
    "write_experiment_figures",
]
