"""Markdown report of an M3 benchmark run: scores, horizon profile, coverage and structures.

Usage::

    python scripts/m3_report.py RUN_DIR [--out RUN_DIR/report.md]

Reads from RUN_DIR:

* ``forecast.csv`` (required): autogp's forecasts in statsforecast layout (model ``AutoGP``) with
  the held-out truth in ``y``;
* ``train.csv`` (required): the training rows ``unique_id``, ``ds``, ``y`` (for the MASE scale);
* ``baselines.csv`` (optional): the statsforecast baselines in the same layout, with ``y``;
* ``structures.csv`` (optional): ``unique_id``, ``structure``, ``weight`` (posterior weights);
* ``metrics.csv`` (optional): autogp's per-series scores; the mean log predictive density and
  the exact CRPS of the particle mixture (``lpd_per_point``, ``crps_mixture_scaled``) are shown;
* ``summary.json`` (optional): run facts; ``date``, ``machine``, ``command``, ``fit_seconds`` and
  ``series`` are shown when present.

Writes the report and three PNG plots next to it: sMAPE by horizon step, empirical against
nominal interval coverage, and the most frequent top structures (when ``structures.csv`` exists).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from autogp.experiments.scoring import (
    horizon_coverage,
    horizon_errors,
    level_label,
    score_forecasts,
    summary_table,
    to_markdown_table,
)
from autogp.forecast.columns import parse_interval_column

SUMMARY_KEYS = ("date", "machine", "command", "fit_seconds", "series")
TOP_STRUCTURES = 15
_KEY_COLUMNS = ("unique_id", "ds", "y")


# ---- reading the run directory ---------------------------------------------------------------
def _read_csv(path: Path, required: Sequence[str]) -> pd.DataFrame:
    frame = pd.read_csv(path)
    for col in required:
        if col not in frame.columns:
            raise ValueError(f"{path} has no column {col!r} (columns: {list(frame.columns)})")
    frame["unique_id"] = frame["unique_id"].astype(str)
    return frame


def _parse_dates(frame: pd.DataFrame) -> pd.DataFrame:
    """``ds`` as datetimes when it parses as dates (so differently written stamps still match)."""
    if frame["ds"].dtype == object:
        try:
            frame = frame.assign(ds=pd.to_datetime(frame["ds"]))
        except (ValueError, TypeError):
            pass
    return frame


def read_forecasts(run_dir: Path) -> pd.DataFrame:
    """``forecast.csv`` joined with ``baselines.csv`` (when present) on ``unique_id``, ``ds``."""
    fc = _parse_dates(_read_csv(run_dir / "forecast.csv", _KEY_COLUMNS))
    baselines_path = run_dir / "baselines.csv"
    if not baselines_path.exists():
        return fc
    baselines = _parse_dates(_read_csv(baselines_path, ("unique_id", "ds")))
    baselines = baselines.drop(columns=[c for c in baselines.columns if c == "y"])
    overlap = [c for c in baselines.columns if c in fc.columns and c not in ("unique_id", "ds")]
    if overlap:
        raise ValueError(f"{baselines_path} repeats columns of forecast.csv: {overlap}")
    merged = fc.merge(baselines, on=["unique_id", "ds"], how="left", validate="one_to_one")
    unmatched = merged[baselines.columns.drop(["unique_id", "ds"])].isna().all(axis=1)
    if unmatched.any():
        print(
            f"warning: {int(unmatched.sum())} forecast rows have no baseline forecast",
            file=sys.stderr,
        )
    return merged


def models_and_levels(fc: pd.DataFrame) -> tuple[list[str], list[float]]:
    """Models with a point column and interval columns, and the levels all of them have."""
    bounds: dict[str, dict[str, set[float]]] = {}
    for col in fc.columns:
        parsed = parse_interval_column(col)
        if parsed is not None and parsed.model in fc.columns:
            sides = bounds.setdefault(parsed.model, {"lo": set(), "hi": set()})
            sides[parsed.side].add(parsed.level)
    models = [col for col in fc.columns if col in bounds]
    if not models:
        raise ValueError("no model columns with -lo-/-hi- interval columns in the forecasts")
    levels = set.intersection(*(sides["lo"] & sides["hi"] for sides in bounds.values()))
    return models, sorted(levels)


def read_summary(run_dir: Path) -> dict:
    path = run_dir / "summary.json"
    if not path.exists():
        return {}
    with path.open() as fh:
        summary = json.load(fh)
    return summary if isinstance(summary, dict) else {}


def top_structures(structures: pd.DataFrame, count: int = TOP_STRUCTURES) -> pd.Series:
    """How often each structure is the highest-weight one of a series (the ``count`` commonest)."""
    for col in ("unique_id", "structure", "weight"):
        if col not in structures.columns:
            raise ValueError(f"structures.csv has no column {col!r}")
    best = structures.loc[structures.groupby("unique_id", sort=False)["weight"].idxmax()]
    return best["structure"].value_counts().head(count)


# ---- plots -----------------------------------------------------------------------------------
def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_horizon(errors: pd.DataFrame, path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for model in errors.columns:
        ax.plot(errors.index, errors[model], marker="o", markersize=3, label=model)
    ax.set_xlabel("forecast step")
    ax.set_ylabel("mean sMAPE (%)")
    ax.set_title("sMAPE by forecast step")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_coverage(summary: pd.DataFrame, levels: Sequence[float], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    nominal = [level / 100.0 for level in levels]
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", label="nominal")
    for model in summary.index:
        empirical = [summary.loc[model, f"coverage_{level_label(level)}"] for level in levels]
        ax.plot(nominal, empirical, marker="o", label=model)
    ax.set_xlabel("nominal coverage")
    ax.set_ylabel("empirical coverage")
    ax.set_title("Interval coverage")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_structures(counts: pd.Series, path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(counts) + 1.2))
    ax.barh(range(len(counts)), counts.to_numpy()[::-1])
    ax.set_yticks(range(len(counts)), [str(s) for s in counts.index[::-1]], fontsize=8)
    ax.set_xlabel("series with this top structure")
    ax.set_title(f"Most frequent top structures (up to {TOP_STRUCTURES})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---- the report ------------------------------------------------------------------------------
def mixture_scores(metrics: pd.DataFrame) -> pd.DataFrame:
    """Mean, median and largest value over series of autogp's density scores (those present)."""
    columns = [c for c in ("lpd_per_point", "crps_mixture_scaled") if c in metrics.columns]
    return metrics[columns].agg(["mean", "median", "max"]).T.rename_axis("score")


def _header(run_dir: Path, summary: dict) -> list[str]:
    lines = ["# M3 monthly benchmark report", "", f"Run directory: `{run_dir}`", ""]
    for key in SUMMARY_KEYS:
        if key in summary:
            value = summary[key]
            shown = f"`{value}`" if key == "command" else str(value)
            lines.append(f"- **{key}**: {shown}")
    return lines + [""]


def build_report(run_dir: Path, out: Path) -> Path:
    """Score the run in ``run_dir`` and write the report to ``out`` (plots next to it)."""
    fc = read_forecasts(run_dir)
    train = _parse_dates(_read_csv(run_dir / "train.csv", _KEY_COLUMNS))
    models, levels = models_and_levels(fc)
    summary = read_summary(run_dir)
    for key in SUMMARY_KEYS:
        if key in summary:
            print(f"{key}: {summary[key]}")

    scores = score_forecasts(fc, train, models, levels)
    table = summary_table(scores, levels)
    errors = horizon_errors(fc, models)

    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.stem
    lines = _header(run_dir, summary)
    n_series = fc["unique_id"].nunique()
    lines += [
        "## Accuracy",
        "",
        f"Means over {n_series} series. sMAPE in percent (M3 definition); MASE scaled by the "
        "in-sample seasonal-naive error (lag 12); scaled CRPS from the point forecast and the "
        "interval bounds (quantile approximation, divided by mean |y|); coverage_L is the share "
        "of held-out points inside the L% interval, width_L its mean width over mean |y|.",
        "",
        to_markdown_table(table, float_format=".4g"),
        "## sMAPE by forecast step",
        "",
        to_markdown_table(errors.T.rename_axis("model"), float_format=".2f"),
    ]

    horizon_png = out.with_name(f"{stem}_smape_by_horizon.png")
    plot_horizon(errors, horizon_png)
    lines += [f"![sMAPE by forecast step]({horizon_png.name})", ""]
    if levels:
        coverage_png = out.with_name(f"{stem}_coverage.png")
        plot_coverage(table, levels, coverage_png)
        lines += ["## Interval coverage", "", f"![Coverage]({coverage_png.name})", ""]
        widest = max(levels)
        by_step = horizon_coverage(fc, models, widest)
        lines += [
            f"Coverage of the {level_label(widest)}% interval by forecast step:",
            "",
            to_markdown_table(by_step.T.rename_axis("model"), float_format=".3f"),
        ]

    metrics_path = run_dir / "metrics.csv"
    if metrics_path.exists():
        scores_table = mixture_scores(_read_csv(metrics_path, ("unique_id",)))
        if len(scores_table):
            lines += [
                "## autogp's predictive density",
                "",
                "Per-series scores of the particle mixture itself (not its quantiles): the mean "
                "log predictive density per held-out point, and the exact CRPS of the mixture "
                "over mean |y| (of a log-normal mixture under `log_transform`); mean, median "
                "and largest value over the series.",
                "",
                to_markdown_table(scores_table, float_format=".4g"),
            ]

    structures_path = run_dir / "structures.csv"
    if structures_path.exists():
        counts = top_structures(_read_csv(structures_path, ("unique_id",)))
        structures_png = out.with_name(f"{stem}_structures.png")
        plot_structures(counts, structures_png)
        lines += [
            "## Top structures",
            "",
            "The structure with the largest posterior weight in each series, counted over the "
            "panel.",
            "",
            f"![Top structures]({structures_png.name})",
            "",
            to_markdown_table(counts.rename("series").to_frame().rename_axis("structure")),
        ]

    out.write_text("\n".join(lines))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="directory written by the M3 experiment")
    parser.add_argument("--out", type=Path, help="report path (default RUN_DIR/report.md)")
    args = parser.parse_args(argv)
    out = args.out if args.out is not None else args.run_dir / "report.md"
    path = build_report(args.run_dir, out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
