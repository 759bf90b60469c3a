"""Make the gallery (``docs/gallery.md`` and its pictures) from the bundled example data.

One fit of the airline series (monthly passengers, 1949-1960) with the defaults, on all but the
last 18 months, then what autogp shows of it: the forecast against the held-out months, the
decomposition into components, the posterior over kernel structures (a plot and a table) and
the plain-English explanation. It also draws the one-screen picture of how autogp works that
the README shows (``docs/images/how-it-works.png``).

    python scripts/make_gallery.py [--out docs] [--seed 0] [--tiny]

``--tiny`` is a smoke run (2 particles, 2 rounds, trees of depth 1): the pictures are made the
same way but show a poor fit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autogp import AutoGP, plots  # noqa: E402
from autogp.forecast.columns import MODEL_NAME  # noqa: E402

DATA = ROOT / "examples" / "data" / "airline.csv"
HOLDOUT = 18
LEVELS = (80, 95)
TINY = {"smc.num_particles": 2, "smc.num_rounds": 2, "grammar.max_depth": 1, "refine.steps": 2}
DPI = 90  # small files: the pictures are committed


def pipeline_figure():
    """The README's picture: data arrive in rounds, particles are kernel expressions that
    move and are reweighted, the weighted particles are the posterior that forecasts."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig = Figure(figsize=(10, 3.3), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 3.3)
    ax.axis("off")
    boxes = [
        (0.1, "data", "a series (ds, y)\nor a panel\n\nscaled; log or Box-Cox\n"
         "where the spread\ngrows with the level"),
        (2.6, "SMC over structures", "particles = kernel trees\nLIN + PER * GE, BM, ...\n\neach "
         "round adds data,\nreweights, resamples,\nmoves trees (exact MH),\nrefines parameters"),
        (5.1, "posterior", "weighted particles:\na mixture of GPs\n\nP(structure | data)\n"
         "parameters in data units\n(period = 12 months)"),
        (7.6, "what you get", "forecasts + intervals\n(statsforecast layout)\n\ncomponents: "
         "trend,\nseasonal, residual\n\nexplain(), kernels()"),
    ]
    width = 2.3
    for x, title, body in boxes:
        ax.add_patch(FancyBboxPatch((x, 0.15), width, 2.9, boxstyle="round,pad=0.05",
                                    facecolor="#eef3fa", edgecolor="#4a72b0"))
        ax.text(x + width / 2, 2.8, title, ha="center", va="center", fontsize=11,
                fontweight="bold")
        ax.text(x + width / 2, 1.45, body, ha="center", va="center", fontsize=8.5,
                linespacing=1.35)
    for x, _, _ in boxes[:-1]:
        ax.add_patch(FancyArrowPatch((x + width + 0.02, 1.6), (x + 2.5 - 0.02, 1.6),
                                     arrowstyle="-|>", mutation_scale=14, color="#4a72b0"))
    return fig


def _markdown_table(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)


def gallery_page(model: AutoGP, images: dict[str, str], seed: int, tiny: bool) -> str:
    top = model.kernels().sort_values("weight", ascending=False).head(5)
    table = pd.DataFrame({
        "structure": [f"`{s}`" for s in top["structure"]],
        "weight": [f"{w:.3f}" for w in top["weight"]],
    })
    note = "\n*Made with `--tiny`: a smoke run, not a real fit.*\n" if tiny else ""
    return f"""# Gallery

What autogp shows of one fit: the airline series (`examples/data/airline.csv`, monthly
passengers 1949-1960), fitted with the defaults (seed {seed}) on all but the last {HOLDOUT}
months. Made by `python scripts/make_gallery.py`; rerun it to regenerate this page. The
figures of an experiment's report (`autogp run`) are in [experiment reports](reports.md).
{note}
## Forecast

`model.predict({HOLDOUT}, level={list(LEVELS)})`, drawn by `model.plot(forecast)` (or
`autogp fit ... --plot forecast.png`): the observed points, the forecast mean, one band per
interval level, and here the held-out months as crosses.

![forecast]({images["forecast"]})

## Components

`model.decompose()`, drawn by `autogp.plots.plot_components` (or `autogp fit ... --components
components.png`): the posterior mean of each part of the structures (trend, seasonal, ...),
in the units the series was fitted in, where the parts add up to the fitted mean.

![components]({images["components"]})

## Structures

`model.kernels()`: the posterior over kernel expressions, with weights (the top five):

{_markdown_table(table)}

drawn by `autogp.plots.plot_structures`:

![structures]({images["structures"]})

`print(model.explain())` (or `autogp explain model.autogp`):

```text
{model.explain().rstrip()}
```
"""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs", help="folder of gallery.md")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tiny", action="store_true", help="smoke run: a toy fit")
    args = p.parse_args(argv)

    images_dir = args.out / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    df = pd.read_csv(DATA)
    train, test = df.iloc[:-HOLDOUT], df.iloc[-HOLDOUT:]
    model = AutoGP(seed=args.seed, overrides=TINY if args.tiny else None, progress=False)
    model.fit(train)
    forecast = model.predict(HOLDOUT, level=list(LEVELS))
    forecast["ds"] = pd.to_datetime(forecast["ds"])
    held_out = forecast.assign(y=test["y"].to_numpy())
    figures = {
        "forecast": plots.plot_forecast(model, held_out, title=f"airline: {MODEL_NAME} forecast "
                                        f"of the last {HOLDOUT} months"),
        "components": plots.plot_components(model.decompose(), title="airline: components"),
        "structures": plots.plot_structures(model.kernels(), top=8),
        "how-it-works": pipeline_figure(),
    }
    images = {}
    for name, fig in figures.items():
        path = plots.save_figure(fig, images_dir / f"{name}.png", dpi=DPI)
        images[name] = f"images/{path.name}"
        print(f"wrote {path} ({path.stat().st_size // 1024} kB)")
    page = args.out / "gallery.md"
    page.write_text(gallery_page(model, images, args.seed, args.tiny))
    print(f"wrote {page}; {MODEL_NAME} mean over the held-out months: "
          f"{forecast[MODEL_NAME].mean():.1f} (observed {test['y'].mean():.1f})")


if __name__ == "__main__":
    main()
