"""Models: CBraMod (EEG), surface vision transformers, heads."""
from .cbramod import CBraMod, CBraModConfig

__all__ = ["CBraMod", "CBraModConfig"]
