"""The structure table that ``autogp explain`` and ``autogp fit --explain`` print.

Parameters are printed in the units each series was fitted in: time in the axis' unit, values
(amplitudes, the noise) in data units, or in log or Box-Cox units when the values were
transformed first; every heading says which.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from autogp.forecast.tables import full_resolution_reading, scored_by, window_reading


def value_units(scaler: Any) -> str:
    """``"data units"``, ``"log units"`` or ``"Box-Cox units (lambda 0.5)"``: the units a
    fit's values, amplitudes and noise are in."""
    if not scaler.transformed:
        return "data units"
    if scaler.log:
        return "log units"
    return f"Box-Cox units (lambda {scaler.boxcox_lambda:g})"


def _shared_units(model: Any) -> str | None:
    """The value units of every series, or None when a panel mixes them."""
    units = {value_units(model.fits[uid].scaler) for uid in model.unique_ids}
    return units.pop() if len(units) == 1 else None


def explain_table(model: Any, top: int) -> Table:
    table = Table(title="Posterior over kernel structures", show_lines=False)
    panel = len(model.unique_ids) > 1
    if panel:
        table.add_column("series")
    table.add_column("weight", justify="right")
    table.add_column("n", justify="right")
    table.add_column("structure")
    shared = _shared_units(model)
    table.add_column(f"reading ({shared})" if shared else "reading (each series' units)")
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
    shared = _shared_units(model)
    values = shared or "the units each series was fitted in"
    console.print("Highest-weight expression of each structure (time in the axis' unit; "
                  f"amplitudes and noise sd in {values}):", markup=False, soft_wrap=True)
    for uid in model.unique_ids:
        rows = kern[kern["unique_id"] == uid].head(top)
        fit = model.fits[uid]
        units = value_units(fit.scaler)
        prefix = f"{uid}: " if len(model.unique_ids) > 1 else ""
        if window := window_reading(fit):
            console.print(f"  {prefix}fitted on {window}", markup=False, soft_wrap=True)
        if fit.scaler.transform_reason:
            console.print(f"  {prefix}{fit.scaler.transform_reason}", markup=False,
                          soft_wrap=True)
        if stage := full_resolution_reading(fit):
            console.print(f"  {prefix}{stage}", markup=False, soft_wrap=True)
        scores = scored_by(fit)
        for _, r in rows.iterrows():
            console.print(
                f"  {prefix}{100 * r['weight']:5.1f}%  {r['expression']}  "
                f"noise sd {r['noise_sd']:.4g} ({units})",
                markup=False,
                soft_wrap=True,
            )
            if r["structure"] in scores:
                console.print(f"  {prefix}         scored by: {scores[r['structure']]}",
                              markup=False, soft_wrap=True)


__all__ = ["explain_table", "print_explanation", "value_units"]
