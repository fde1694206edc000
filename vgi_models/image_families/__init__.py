"""One module per diffusers image-editing pipeline family, each an `ImageFamily` (`base`),
registered here by the registry's `family` key (an entry with `output: image`); beside each,
a `<module>_tiny` with its tiny randomly initialised builder (`source: tiny`). Importing this
package imports no torch."""

from vgi_models.image_families.base import ImageFamily
from vgi_models.image_families.flux2 import Flux2
from vgi_models.image_families.joyai_image_edit import JoyAIImageEdit
from vgi_models.image_families.qwen_image_edit import QwenImageEdit

IMAGE_FAMILIES: dict[str, ImageFamily] = {
    family.name: family
    for family in (
        QwenImageEdit("qwen_image_edit"),
        QwenImageEdit("qwen_image_edit_plus"),
        Flux2(),
        JoyAIImageEdit(),
    )
}
