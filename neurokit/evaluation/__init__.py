"""Evaluation: metrics (:mod:`~neurokit.evaluation.metrics`), the classical baselines and chance
(:mod:`~neurokit.evaluation.baselines`), and the evaluation schemes with MOABB's result rows
(:mod:`~neurokit.evaluation.schemes`)."""
