"""The image models reached through their APIs (the image branch, Table 4): one provider a
module, registered in `providers.PROVIDERS`; `job.py` is rule `generate_image_api`."""
