"""Learn the shipped priors (autogp/config/learned_prior.toml) from the panels' training rows.

Each part config's series (M3's four groups, the development panel) are read with its [data]
settings; their test rows are never read, and the last ``--hold`` horizons of the training
rows are cut off too, so that rolling-origin training windows at n - h (lab/choose_defaults.py
with --origins 1) score a prior that has not seen their targets. At most ``--max-series``
series of each part (the first by id) are fitted under the AutoGP.jl prior; the type-II prior
of each kind of series (season, length) is learned from their particles
(autogp.parallel.panel_prior) and written as a prior file.

    python scripts/learn_priors.py --max-series 60 --workers 2       # the shipped file
    python scripts/learn_priors.py --without configs/m3_all/yearly.toml --output no_yearly.toml
    python scripts/learn_priors.py --tiny --output /tmp/prior.toml   # smoke test
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = ["configs/m3_all/monthly.toml", "configs/m3_all/quarterly.toml",
         "configs/m3_all/yearly.toml", "configs/m3_all/other.toml", "configs/dev_panel.toml"]
TINY = {"smc.num_particles": 4, "smc.num_rounds": 3, "smc.structure_moves": 2,
        "refine.steps": 5, "grammar.max_depth": 2}


def training_series(part: Path, hold: int, max_series: int, overrides: dict) -> list:
    """The part's training series (test rows never read) without their last ``hold``
    horizons, at most ``max_series`` of them (the first by id), ids prefixed by the part."""
    import dataclasses

    from autogp.config import load_config
    from autogp.experiments.runner import (
        apply_freq_column,
        group_members,
        resolve_data_path,
        series_reader,
        series_to_read,
        split_series,
    )

    config = load_config(part, overrides)
    data_path = resolve_data_path(config, part)
    members = group_members(data_path, config)
    ids = series_to_read(data_path, config, members, None)
    series = series_reader(config, ids)(data_path)
    series = [s for s in series if members is None or s.unique_id in members]
    if config.data.freq_col is not None:
        series = apply_freq_column(series, data_path, config)
    out = []
    for s in sorted(series, key=lambda s: s.unique_id):
        train, test = split_series(s, None)
        cut = hold * (test.n if test is not None else config.forecast.horizon)
        if train.n - cut < 10:
            continue
        train = train.split(cut)[0] if cut else train
        out.append(dataclasses.replace(train, unique_id=f"{part.stem}/{s.unique_id}",
                                       key_id=s.unique_id))
        if len(out) == max_series:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", nargs="+", default=PARTS, help="part configs to learn from")
    p.add_argument("--without", nargs="*", default=[], help="part configs left out (transfer)")
    p.add_argument("--max-series", type=int, default=60, help="series fitted per part")
    p.add_argument("--hold", type=int, default=1,
                   help="training horizons cut off each series' end (the validation origins)")
    p.add_argument("--min-series", type=int, default=20, help="series a kind needs")
    p.add_argument("--workers", type=int, default=0, help="processes (0: one per core)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", type=Path, default=ROOT / "autogp" / "config" /
                   "learned_prior.toml")
    p.add_argument("--objective", choices=("evidence", "predictive", "both"), default="evidence",
                   help="type-II evidence, or the pooled one-step-ahead predictive density of "
                   "each series' second half; both: two files (the second's name ends in "
                   "_predictive)")
    p.add_argument("--laplace", action="store_true",
                   help="integrate each particle's prior ratio over its mode's Laplace width "
                   "(default: read at the mode, the shipped file's way)")
    p.add_argument("--resume", type=Path, default=None,
                   help="folder keeping the fits: a rerun (another objective) refits nothing")
    p.add_argument("--tiny", action="store_true", help="smoke test: 3 series per part, tiny model")
    args = p.parse_args(argv)

    from autogp._x64 import x64
    from autogp.config import load_config
    from autogp.config.learned_prior import AUTOGP_JL, prior_table_text
    from autogp.parallel.panel import fit_panel
    from autogp.parallel.panel_prior import learn_table, series_kind, summary

    overrides = dict(TINY) if args.tiny else {}
    max_series = 3 if args.tiny else args.max_series
    min_series = 2 if args.tiny else args.min_series
    left_out = {Path(w).resolve() for w in args.without}
    parts = [ROOT / part if not Path(part).is_absolute() else Path(part) for part in args.parts]
    parts = [part for part in parts if part.resolve() not in left_out]
    started = time.perf_counter()
    series = []
    for part in parts:
        series += training_series(part, args.hold, max_series, overrides)
    config = load_config(None, {**overrides, "seed": args.seed, "grammar.prior": AUTOGP_JL,
                                "smc.workers": args.workers})
    objectives = ["evidence", "predictive"] if args.objective == "both" else [args.objective]
    command = "python scripts/learn_priors.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    with x64():
        fits = fit_panel(config, series, progress=not args.tiny, resume=args.resume).fits
        kinds = {s.unique_id: series_kind(s, config) for s in series}
        for objective in objectives:
            table = learn_table(fits, kinds, config, min_series=min_series, max_series=10**6,
                                objective=objective, laplace=args.laplace,
                                source=(f"{len(fits)} training series of "
                                        f"{', '.join(part.stem for part in parts)}, seed "
                                        f"{args.seed}, objective {objective}"
                                        f"{', Laplace widths' if args.laplace else ''}; "
                                        f"{command}"))
            what = ("type-II empirical Bayes" if objective == "evidence" else
                    "the pooled one-step-ahead predictive density of each series' second half")
            header = (f"Priors learned across series ({what}, over each series' SMC\n"
                      "particles: autogp/inference/empirical_bayes.py) from the training rows "
                      "of the\nshipped panels, without their last horizon (the validation "
                      "windows' targets).\ngrammar.prior = \"learned\" reads the shipped "
                      "file; regenerate with the command in `source`.")
            output = args.output if objective == objectives[0] else args.output.with_name(
                f"{args.output.stem}_{objective}{args.output.suffix}")
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(prior_table_text(table, header), encoding="utf-8")
            for line in summary(table):
                print(f"{objective}: {line}")
            print(f"{len(fits)} series fitted, {len(table.groups)} groups written to {output} "
                  f"in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
