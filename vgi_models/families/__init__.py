"""One module per diffusers pipeline family, each a `Family` (`base`), registered here by the
registry's `family` key; beside each, a `<module>_tiny` with its tiny randomly initialised
builder (`source: tiny`). A tiny module imports its family module, never the reverse; importing
this package imports no torch (the workflow reads the families while building its DAG)."""

from vgi_models.families.base import Family
from vgi_models.families.diffusers_i2v import DiffusersI2V
from vgi_models.families.hunyuan15 import HunyuanVideo15
from vgi_models.families.ltx23 import LTX23
from vgi_models.families.minimax_h3 import MiniMaxH3
from vgi_models.families.wan import Wan

FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Wan("wan21"),
        Wan("wan22"),
        HunyuanVideo15(),
        LTX23(),
        DiffusersI2V(),
        MiniMaxH3(),
    )
}
