"""The prompt registry's documented import path (``evennia_ai.prompt_registry``).

The registry lives in :mod:`evennia_ai.prompt.registry` (the ``PromptRegistry`` Script, its
storage and operations) and :mod:`evennia_ai.prompt.registry_io` (validation and JSON
import/export records, pure). This module re-exports their public names so code and docs that
import from here keep working, and so the typeclass path registries created before the move
stored in the database, ``evennia_ai.prompt_registry.PromptRegistry``, still loads: Evennia
imports a Script's class by that path. :func:`get_prompt_registry` moves such a registry to the
class's own path the first time it finds it (its Attributes untouched).
"""

from __future__ import annotations

from evennia_ai.prompt.registry import (
    LEGACY_TYPECLASS_PATH,
    REGISTRY_KEY,
    PromptRegistry,
    effective_context_config,
    get_prompt_registry,
)
from evennia_ai.prompt.registry_io import (
    COMPONENT_EDITABLE,
    COMPONENT_FIELDS,
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MAX_ERROR_CHARS,
    MAX_FEWSHOT_EXAMPLES,
    REGISTRY_SECTIONS,
    STATIC_EDITABLE,
    TEMPLATE_EDITABLE,
    TEMPLATE_FIELDS,
    PromptRegistryError,
    components_of,
    context_config_of,
    contract_problems_of_state,
)

__all__ = [
    "COMPONENT_EDITABLE",
    "COMPONENT_FIELDS",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "LEGACY_TYPECLASS_PATH",
    "MAX_ERROR_CHARS",
    "MAX_FEWSHOT_EXAMPLES",
    "REGISTRY_KEY",
    "REGISTRY_SECTIONS",
    "STATIC_EDITABLE",
    "TEMPLATE_EDITABLE",
    "TEMPLATE_FIELDS",
    "PromptRegistry",
    "PromptRegistryError",
    "components_of",
    "context_config_of",
    "contract_problems_of_state",
    "effective_context_config",
    "get_prompt_registry",
]
