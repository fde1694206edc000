"""Checking a config (or the model registry) against its JSON Schema, with short errors.

Snakemake reads a nested `--config` value such as `judge='{enabled: true}'` with YAML's
base loader, which leaves every scalar a string (`'true'`, `'1'`). `check` reads such a
string as YAML where the schema wants another type and the YAML value fits (a mapping's
values by its `additionalProperties`: `prices={gpu_hour: {h100: 2.5}}`), then reports the
first remaining problem in a few lines naming the key, instead of the whole schema.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml


class SchemaError(ValueError):
    """A config that does not fit its schema: where, and what is wrong there."""


def _typed(value, schema: dict, root):
    """`value` with strings read as YAML where the YAML value fits `schema` (a part of the
    schema of `root`, a validator, which resolves its `$ref`s) and the string does not, or is
    YAML's null (never meant as the text "null"), but for blanks: a string of spaces is text
    (Qwen-Image-Edit's negative prompt " ")."""
    if isinstance(value, str):
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        fits = root.evolve(schema=schema).is_valid
        wanted = not fits(value) or (parsed is None and not value.isspace())
        return parsed if wanted and not isinstance(parsed, str) and fits(parsed) else value
    if isinstance(value, dict):
        properties, other = schema.get("properties", {}), schema.get("additionalProperties")
        other = other if isinstance(other, dict) else {}
        return {key: _typed(item, properties.get(key, other), root) for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_typed(item, schema["items"], root) for item in value]
    return value


def _where(path) -> str:
    return "".join(f"[{key!r}]" for key in path)


def check(config: dict, schema_path: str | Path, what: str = "config") -> None:
    """Type `config`'s strings in place (see the module docstring); raise `SchemaError`
    naming the key of the first problem (an unknown key: the keys allowed there)."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    config.update(_typed(config, schema, validator))
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    lines = [f"{what}{_where(error.absolute_path)}: {error.message}"]
    if error.validator == "additionalProperties":
        allowed = ", ".join(error.schema.get("properties", {}))
        lines.append(f"  allowed there: {allowed}")
    lines.append(f"  (schema: {schema_path})")
    raise SchemaError("\n".join(lines))
