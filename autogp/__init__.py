"""autogp: automatic covariance-structure discovery and forecasting for time series."""

__version__ = "0.1.0"
