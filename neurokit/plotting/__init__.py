"""Figures drawn from saved results (reports, stores); computing lives elsewhere."""
from .contributions import plot_contributions
from .report import plot_report

__all__ = ["plot_contributions", "plot_report"]
