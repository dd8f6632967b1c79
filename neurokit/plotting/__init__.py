"""Figures drawn from saved results (reports, stores); computing lives elsewhere."""
from .contributions import plot_contributions

__all__ = ["plot_contributions"]
