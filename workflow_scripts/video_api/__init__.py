"""Commercial video models through their own SDKs: one module per provider (a
`provider.VideoProvider`, registered in `providers.py`), the operation kept outside the
outputs, the cost ledger, the job."""
