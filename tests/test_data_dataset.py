"""PatchDataset is a torch Dataset and splits itself (neurokit.data.dataset)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import PatchDataset, open_labelled


def test_patch_dataset_is_a_torch_dataset_and_loads(lr_store):
    ds = PatchDataset(lr_store, labelled=True)
    assert isinstance(ds, torch.utils.data.Dataset)
    x, y = next(iter(torch.utils.data.DataLoader(ds, batch_size=4)))
    assert tuple(x.shape) == (4, *ds.sample_shape) and x.dtype == torch.float32
    assert y.dtype == torch.int64 and set(y.tolist()) <= {0, 1}


def test_split_by_given_subjects_partitions_the_samples(lr_store):
    ds = PatchDataset(lr_store, labelled=True)
    parts = ds.split({"train": ["S001"], "val": ["S002"], "test": ["S002"]})
    assert set(parts) == {"train", "val", "test"}
    assert {str(s) for s in parts["train"].meta("subject")} == {"S001"}
    assert {str(s) for s in parts["test"].meta("subject")} == {"S002"}
    assert len(parts["train"]) + len(parts["test"]) == len(ds)
    assert np.array_equal(
        np.sort(np.concatenate([parts["train"].sample_ids, parts["test"].sample_ids])), np.sort(ds.sample_ids)
    )


def test_split_refuses_a_leak_and_a_card_split_missing_from_the_store(lr_store):
    ds = PatchDataset(lr_store, labelled=True)
    with pytest.raises(ConfigError, match="S001.*both 'train' and 'test'"):
        ds.split({"train": ["S001"], "val": ["S002"], "test": ["S001"]})
    with pytest.raises(ConfigError, match="no subject in the store"):
        ds.split()  # the card's validation subjects (71-89) are not in a store of S001-S002


def test_open_labelled_gives_classes_and_kind(lr_store):
    ds, names, n_classes, kind = open_labelled(lr_store)
    assert (names, n_classes, kind) == (["left_fist", "right_fist"], 2, "binary")
    assert len(ds) == len(PatchDataset(lr_store, labelled=True))
