"""The HDF5 patch store (:mod:`~neurokit.store.patch_store`: :class:`PatchStore`, :class:`PatchStoreWriter`) and
shard sets, folders of stores read as one corpus (:mod:`~neurokit.store.shards`)."""
