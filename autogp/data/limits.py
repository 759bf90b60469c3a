"""How much data one series may have."""

from __future__ import annotations

# Fewer observations than this cannot be fitted.
MIN_POINTS = 3
# Exact GP inference costs O(n^3) time and O(n^2) memory; the readers refuse longer series
# unless told otherwise (``max_points``).
DEFAULT_MAX_POINTS = 5000


__all__ = ["DEFAULT_MAX_POINTS", "MIN_POINTS"]
