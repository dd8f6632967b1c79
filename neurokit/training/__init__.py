"""Training: one loop for every model and head (:mod:`~neurokit.training.trainer`), the pretraining objectives
(:mod:`~neurokit.training.objectives`), optimiser and schedule (:mod:`~neurokit.training.optim`),
distributed setup (:mod:`~neurokit.training.distributed`) and prediction (:mod:`~neurokit.training.predict`)."""
