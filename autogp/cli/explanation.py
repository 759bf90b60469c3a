"""The structure table that ``autogp explain`` and ``autogp fit --explain`` print."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from autogp.forecast.tables import window_reading


def explain_table(model: Any, top: int) -> Table:
    table = Table(title="Posterior over kernel structures", show_lines=False)
    panel = len(model.unique_ids) > 1
    if panel:
        table.add_column("series")
    table.add_column("weight", justify="right")
    table.add_column("n", justify="right")
    table.add_column("structure")
    table.add_column("reading (data units)")
    kern = model.kernels()
    for uid in model.unique_ids:
        rows = kern[kern["unique_id"] == uid].head(top)
        for _, r in rows.iterrows():
            cells = [f"{100 * r['weight']:.1f}%", str(r["particles"]), r["structure"], r["reading"]]
            table.add_row(*([str(uid)] if panel else []), *cells)
    return table


def print_explanation(console: Console, model: Any, top: int) -> None:
    """The structure table, then the leading expressions with their parameters in full."""
    console.print(explain_table(model, top))
    kern = model.kernels()
    console.print("Highest-weight expression of each structure (parameters in data units):")
    for uid in model.unique_ids:
        rows = kern[kern["unique_id"] == uid].head(top)
        fit = model.fits[uid]
        unit = f" ({fit.scaler.units} units)" if fit.scaler.transformed else ""
        prefix = f"{uid}: " if len(model.unique_ids) > 1 else ""
        if window := window_reading(fit):
            console.print(f"  {prefix}fitted on {window}", markup=False, soft_wrap=True)
        if fit.scaler.transform_reason:
            console.print(f"  {prefix}{fit.scaler.transform_reason}", markup=False,
                          soft_wrap=True)
        for _, r in rows.iterrows():
            console.print(
                f"  {prefix}{100 * r['weight']:5.1f}%  {r['expression']}  "
                f"noise sd {r['noise_sd']:.4g}{unit}",
                markup=False,
                soft_wrap=True,
            )


__all__ = ["explain_table", "print_explanation"]
