"""Exact state-space (Kalman filter) likelihoods and smoother predictions for the kernel grammar:
O(N) in the series length where the dense likelihood is O(N^3)."""

from autogp.statespace.compose import REASONS
from autogp.statespace.filter import BLOCK, MAX_FACTORS, support
from autogp.statespace.likelihood import state_space_log_likelihood, time_invariant
from autogp.statespace.models import MAX_HARMONICS, PER_TOLERANCE, per_truncation_error
from autogp.statespace.smoother import state_space_posterior, top_level_terms

__all__ = [
    "BLOCK", "MAX_FACTORS", "MAX_HARMONICS", "PER_TOLERANCE", "REASONS", "per_truncation_error",
    "state_space_log_likelihood", "state_space_posterior", "support", "time_invariant",
    "top_level_terms",
]
