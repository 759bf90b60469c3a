"""``report.md``: an experiment's scores beside the baselines and the published results, and
the overall report of an experiment made of parts (``experiment.parts``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autogp.forecast.columns import MODEL_NAME

# (summary key, column title) of the scores a report shows, when the run has them.
REPORT_COLUMNS = (
    ("mase", "MASE"),
    ("smape", "sMAPE"),
    ("scaled_crps", "scaled CRPS"),
    ("coverage_95", "95% coverage"),
)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "-" if value != value else f"{value:.4f}"
    return "-" if value is None else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table; columns of numbers are right-aligned."""
    numeric = [all(isinstance(row[j], int | float) or row[j] is None for row in rows)
               for j in range(len(header))]
    rule = "|" + "|".join("---:" if j and numeric[j] else "---" for j in range(len(header)))
    lines = ["| " + " | ".join(header) + " |", rule + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _values(summary: dict[str, Any], key: str) -> str:
    values = summary.get(key) or []
    return ", ".join(str(v) for v in values) if values else "-"


def best_baseline(summary: dict[str, Any], metric: str = "mase") -> tuple[str, float] | None:
    """The baseline with the lowest ``metric`` in the summary's comparison, and its value."""
    rows = {m: r.get(metric) for m, r in summary.get("comparison", {}).items() if m != MODEL_NAME}
    rows = {m: v for m, v in rows.items() if v is not None and v == v}
    if not rows:
        return None
    model = min(rows, key=rows.__getitem__)
    return model, rows[model]


def best_published(summary: dict[str, Any], metric: str = "mase") -> tuple[str, float] | None:
    """The published model with the lowest ``metric``, and its value."""
    rows = [(r["model"], r["value"]) for r in summary.get("published", [])
            if r["metric"] == metric]
    return min(rows, key=lambda r: r[1]) if rows else None


def experiment_report(summary: dict[str, Any]) -> str:
    """One experiment's Markdown report: its setting, the per-series means of each model on the
    test split, and the published results for the same split."""
    lines = [f"# {summary['experiment']}", ""]
    lines.append(
        f"{summary['series']} series ({summary['scored_series']} scored, "
        f"{summary['failed_series']} failed) from `{summary['data']}`; horizon "
        f"{_values(summary, 'horizons')}, season {_values(summary, 'seasons')}; seed "
        f"{summary['seed']}, {summary['particles']} particles, fit {summary['fit_seconds']:.0f} s "
        f"on {summary['machine']}."
    )
    priors = summary.get("priors") or {}
    if priors:
        lines.append("Priors: " + "; ".join(f"{count} series under {name}"
                                            for name, count in priors.items()) + ".")
    lines.append("")
    source = summary.get("baseline_source")
    if source:
        lines += [f"Baselines: {source}.", ""]
    comparison = summary.get("comparison", {})
    if comparison:
        first = next(iter(comparison.values()))
        columns = [(k, title) for k, title in REPORT_COLUMNS if k in first]
        lines += ["## Test split: per-series means (lower is better; coverage nearest 0.95)", ""]
        lines += _table(["model", *(title for _, title in columns)],
                        [[m, *(row.get(k) for k, _ in columns)] for m, row in comparison.items()])
        lines.append("")
    published = summary.get("published", [])
    if published:
        lines += ["## Published results (not run here; all series of the test split)", ""]
        lines += _table(["model", "metric", "value", "source"],
                        [[r["model"], r["metric"], r["value"], r["source"]] for r in published])
        lines.append("")
    return "\n".join(lines + figures_section(summary))


def figures_section(summary: dict[str, Any], prefix: str = "") -> list[str]:
    """The lines of a report's ``## Figures``: each figure of ``summary["figures"]`` (its
    file relative to the report, under ``prefix``) with its caption, then why any figure was
    left out (``summary["figure_notes"]``); nothing when the summary has neither."""
    figures, notes = summary.get("figures", []), summary.get("figure_notes", [])
    if not figures and not notes:
        return []
    lines = ["## Figures", ""]
    for f in figures:
        caption = f["caption"][:1].upper() + f["caption"][1:]
        lines += [f"{caption}: [`{f['file']}`]({prefix}{f['file']})", "",
                  f"![{f['caption']}]({prefix}{f['file']})", ""]
    lines += [*(f"{note}" for note in notes), ""] if notes else []
    return lines


def parts_report(name: str, summaries: Sequence[dict[str, Any]],
                 figures: dict[str, Any] | None = None) -> str:
    """The overall report of an experiment made of parts: one row a part, with AutoGP's scores,
    the best baseline and the best published result by MASE; then the ``figures`` of all the
    parts (``{"figures": [...], "figure_notes": [...]}``, as in :func:`figures_section`) and a
    link to each part's report."""
    header = ["experiment", "series", "horizon", "season",
              *(f"AutoGP {title}" for _, title in REPORT_COLUMNS),
              "best baseline (MASE)", "best published (MASE)"]
    rows = []
    for s in summaries:
        ours = s.get("comparison", {}).get(MODEL_NAME, {})
        baseline, published = best_baseline(s), best_published(s)
        rows.append([
            s["experiment"], s["series"], _values(s, "horizons"), _values(s, "seasons"),
            *(ours.get(k) for k, _ in REPORT_COLUMNS),
            f"{baseline[0]} {baseline[1]:.4f}" if baseline else "-",
            f"{published[0]} {published[1]:.4f}" if published else "-",
        ])
    lines = [f"# {name}", "",
             "Per-series means on each part's test split; published results are quoted from "
             "their sources, not run here (see each part's report.md).", ""]
    lines += _table(header, rows) + [""]
    if figures:
        links = ", ".join(f"[{s['experiment']}]({s['experiment']}/report.md)" for s in summaries)
        lines += figures_section(figures)
        lines += [f"Each part's report, with its own figures: {links}.", ""]
    return "\n".join(lines)


__all__ = ["REPORT_COLUMNS", "best_baseline", "best_published", "experiment_report",
           "figures_section", "parts_report"]
