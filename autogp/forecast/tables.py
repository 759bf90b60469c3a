"""The structure posterior of fitted series as a table and as plain text."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from autogp.forecast.covariates import covariate_effects
from autogp.forecast.explain import describe
from autogp.inference.posterior import Posterior
from autogp.kernels import structure, to_text

STRUCTURE_COLUMNS = (
    "unique_id",
    "structure",
    "weight",
    "particles",
    "expression",
    "noise_sd",
    "reading",
)


def structure_table(
    posteriors: Sequence[Posterior], order: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per distinct structure per series, sorted by weight within each series (series
    in ``order``, by id; default: as given); columns :data:`STRUCTURE_COLUMNS` (see
    :meth:`autogp.AutoGP.kernels`)."""
    rows = []
    for post in posteriors:
        w = post.weights()
        exprs = post.expressions()
        noise_sd = post.noise_sd()
        groups: dict[str, list[int]] = {}
        for i, e in enumerate(exprs):
            groups.setdefault(structure(e, post.covariates), []).append(i)
        for text, idx in groups.items():
            best = max(idx, key=lambda i: w[i])
            data_expr = post.in_data_units(exprs[best])
            rows.append(
                {
                    "unique_id": post.unique_id,
                    "structure": text,
                    "weight": float(sum(w[i] for i in idx)),
                    "particles": len(idx),
                    "expression": to_text(data_expr, params=True, precision=4,
                                          covariates=post.covariates),
                    "noise_sd": float(noise_sd[best]),
                    "reading": describe(data_expr, post.series.axis, post.covariate_scaling),
                }
            )
    df = pd.DataFrame(rows, columns=list(STRUCTURE_COLUMNS))
    ids = [post.unique_id for post in posteriors] if order is None else order
    df["_o"] = df["unique_id"].map({u: i for i, u in enumerate(ids)})
    df = df.sort_values(["_o", "weight"], ascending=[True, False], kind="stable")
    return df.drop(columns="_o").reset_index(drop=True)


def window_reading(post: Posterior) -> str | None:
    """"the last 300 of 3159 observations (data.window)" when the fit saw only its window;
    "every 3rd of the last 898 of 3984 observations (...)" when the window was thinned, and
    ", then 20 new ones" after online updates (which fit every new observation)."""
    if not post.left_out:
        return None
    n, total = post.series.n, post.series.n + post.left_out
    if post.stride == 1:
        return f"the last {n} of {total} observations (data.window)"
    thinned = n - post.added
    span = (thinned - 1) * post.stride + 1
    then = f", then {post.added} new ones" if post.added else ""
    return (f"every {_ordinal(post.stride)} of the last {span} of {total - post.added} "
            f"observations{then} ({n} points: data.window, data.window_seasons)")


def window_likelihood(post: Posterior) -> str:
    """The likelihood the window's fit used, in words."""
    if post.num_inducing:
        return f"sparse likelihood on the window ({post.num_inducing} inducing points)"
    return "dense likelihood on the window"


def scored_by(post: Posterior) -> dict[str, str]:
    """Per structure (as in :func:`structure_table`), the likelihood that scored its heaviest
    particle and, for one that kept the window's fit, why; empty where the full-resolution
    stage did not run."""
    fr = post.full_resolution
    if fr is None:
        return {}
    w = post.weights()
    best: dict[str, int] = {}
    for i, e in enumerate(post.expressions()):
        text = structure(e, post.covariates)
        if text not in best or w[i] > w[best[text]]:
            best[text] = i
    window = window_likelihood(post)
    return {text: fr.scored_by(i, window) for text, i in best.items()}


def full_resolution_reading(post: Posterior) -> str | None:
    """One line on the full-resolution stage (None where it did not run)."""
    fr = post.full_resolution
    if fr is None:
        return None
    done = int(fr.state_space.sum())
    searched = (f"; the search gave GE's prior weight to {post.ge_weight_to}, which has a "
                "state-space form (data.full_resolution_ge)") if post.ge_weight_to else ""
    if not done:
        why = f": {fr.note}" if fr.note else ""
        return (f"full resolution (data.full_resolution): no structure re-fitted on the last "
                f"{len(fr.t)} points{why}; all keep the {window_likelihood(post)}{searched}")
    return (f"full resolution (data.full_resolution): {done} structure(s) re-fitted on the "
            f"last {len(fr.t)} points by the Kalman filter (state dimension {fr.dim}), weighted "
            f"by that exact likelihood; the others keep the {window_likelihood(post)}"
            f"{searched}")


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def explanation(posteriors: Sequence[Posterior], table: pd.DataFrame, top: int = 5) -> str:
    """A plain-text summary of the structure posterior (the ``top`` rows of ``table``, a
    :func:`structure_table`, per series)."""
    lines = []
    for post in posteriors:
        rows = table[table["unique_id"] == post.unique_id]
        s = post.series
        unit = f" in {post.scaler.units} units" if post.scaler.transformed else ""
        seen = window_reading(post) or f"{s.n} observations"
        lines.append(
            f"{post.unique_id}: {seen}, {s.axis.describe()}; "
            f"{len(post.noise)} particles, {len(rows)} distinct structures"
        )
        if post.scaler.transform_reason:
            lines.append(f"  {post.scaler.transform_reason}")
        prior = post.prior or "autogp.jl (the config's [priors] and [grammar.weights])"
        lines.append(f"  prior: {prior}")
        stage = full_resolution_reading(post)
        if stage:
            lines.append(f"  {stage}")
        scores = scored_by(post)
        for _, r in rows.head(top).iterrows():
            lines.append(f"  {100 * r['weight']:5.1f}%  {r['reading']}")
            lines.append(f"          {r['expression']}  (noise sd {r['noise_sd']:.4g}{unit})")
            if r["structure"] in scores:
                lines.append(f"          scored by: {scores[r['structure']]}")
        if len(rows) > top:
            rest = rows["weight"].iloc[top:].sum()
            lines.append(f"  {100 * rest:5.1f}%  ({len(rows) - top} more structures)")
        lines += [f"  {line}" for line in covariate_effects(post)]
    return "\n".join(lines)


__all__ = ["STRUCTURE_COLUMNS", "explanation", "full_resolution_reading", "scored_by",
           "structure_table", "window_likelihood", "window_reading"]
