"""Evaluation: metrics (:mod:`~neurokit.evaluation.metrics`), the classical baselines and chance
(:mod:`~neurokit.evaluation.baselines`), the evaluation schemes with MOABB's result rows
(:mod:`~neurokit.evaluation.schemes`), linear probes (:mod:`~neurokit.evaluation.probe`), the confound checks
(:mod:`~neurokit.evaluation.confounds`), the cards' protocols (:mod:`~neurokit.evaluation.protocol`) and the stimulus
retrieval protocol (:mod:`~neurokit.evaluation.retrieval`)."""
