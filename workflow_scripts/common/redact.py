"""Secrets out of what the workflow writes: config values (an endpoint given by `--config`,
a job's last log line) reach status.html, status_errors.csv and the terminal's summary
only through `redact`."""

from __future__ import annotations

import re

HIDDEN = "***"
# user:password@ (or a lone token@) after a URL's scheme
CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s?#'\"]+@")
# a query parameter whose name says it holds a secret: key=, api_key=, apikey=, token=,
# access_token=, sig=, signature=, X-Amz-Signature=, secret=, password=, ...
KEY_PARAMETER = re.compile(
    r"(?P<name>[?&;][A-Za-z0-9_.-]*?(?:key|token|sig|signature|secret|password|passwd|"
    r"credential|auth)[A-Za-z0-9_.-]*=)[^&#;\s'\"]+",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """`text` with every URL's credentials and every key-like query parameter's value
    replaced by `***`."""
    text = CREDENTIALS.sub(rf"\g<scheme>{HIDDEN}@", text)
    return KEY_PARAMETER.sub(rf"\g<name>{HIDDEN}", text)
