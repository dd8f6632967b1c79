"""Models: CBraMod (EEG), surface vision transformers, heads."""
from neurokit.models.cbramod import CBraMod, CBraModConfig
from neurokit.models.sit import SiT, SiTConfig, create_sit, sit_config
from neurokit.models.vsmae import VSMAE, VSMAEConfig, create_vsmae

__all__ = ["CBraMod", "CBraModConfig", "SiT", "SiTConfig", "create_sit", "sit_config", "VSMAE", "VSMAEConfig", "create_vsmae"]
