"""Figures drawn from saved results (reports, stores); computing lives elsewhere."""

from neurokit.plotting.contributions import plot_contributions
from neurokit.plotting.report import plot_report

__all__ = ["plot_contributions", "plot_report"]
