"""Models: CBraMod (EEG), surface vision transformers, heads."""
from .cbramod import CBraMod, CBraModConfig
from .sit import SiT, SiTConfig, create_sit, sit_config
from .vsmae import VSMAE, VSMAEConfig, create_vsmae

__all__ = ["CBraMod", "CBraModConfig", "SiT", "SiTConfig", "create_sit", "sit_config", "VSMAE", "VSMAEConfig", "create_vsmae"]
