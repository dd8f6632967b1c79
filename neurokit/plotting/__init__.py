"""Figures drawn from saved results (reports, stores); computing lives elsewhere."""
from .report import plot_report

__all__ = ["plot_report"]
