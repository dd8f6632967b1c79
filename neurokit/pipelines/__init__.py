"""Pipelines: prepare (files → store), pretrain, finetune, evaluate. The CLI is a thin shell over these."""
