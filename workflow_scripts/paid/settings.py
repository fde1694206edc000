"""A paid provider's settings (`SETTINGS`, by its SDK's names) and the checks of a registry
entry's `generation` against them, with no SDK imported: both API branches' providers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One setting: its allowed values (None: any of `kind`), and whether it is required."""

    kind: type | tuple[type, ...]
    allowed: tuple | None = None
    required: bool = False


class SettingChecks:
    """A provider's settings (`SETTINGS`, by SDK name) and the checks of a registry entry's
    `generation` against them, with no SDK imported (the image API providers share them)."""

    SETTINGS: dict[str, Setting] = {}  # the registry entry's `generation`, by SDK name

    @classmethod
    def rule_problems(cls, model_id: str, generation: dict) -> list[str]:
        """Problems of allowed values that the service refuses together, each
        '<setting>: <why>' (none by default)."""
        return []

    @classmethod
    def setting_problems(cls, key: str, name: str, model_id: str, generation: dict) -> list[str]:
        """Every setting of model `key` (provider `name`) the provider does not allow, each
        naming the key and the allowed values."""
        allowed, found = cls.SETTINGS, []
        where = f"model {key!r} (provider {name}): generation"
        for unknown in generation.keys() - allowed.keys():
            found.append(f"{where}.{unknown} is not a {name} setting ({', '.join(allowed)})")
        for setting_name, setting in allowed.items():
            if setting_name not in generation:
                if setting.required:
                    found.append(f"{where}.{setting_name} is required")
                continue
            value, kinds = generation[setting_name], setting.kind
            if not isinstance(value, kinds) or (kinds is int and isinstance(value, bool)):
                kinds = kinds if isinstance(kinds, tuple) else (kinds,)
                names = " or ".join(kind.__name__ for kind in kinds)
                found.append(f"{where}.{setting_name}: {value!r} is not a {names}")
            elif setting.allowed and value not in setting.allowed:
                values = ", ".join(map(repr, setting.allowed))
                found.append(f"{where}.{setting_name}: {value!r} is not allowed ({values})")
        if found:
            return found
        return [f"{where}.{problem}" for problem in cls.rule_problems(model_id, generation)]
