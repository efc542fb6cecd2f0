"""evennia-ai: LLM-driven assistants and NPCs for Evennia.

Start with :class:`evennia_ai.typeclasses.AIAssistantCharacter` (or the
:class:`~evennia_ai.typeclasses.AIAssistantMixin`), the settings in :mod:`evennia_ai.conf`, and
``docs/`` in the repository. Importing this package loads nothing else, so the pure modules
(prompt components, templates, contexts, execution pattern, tokens, workspace) work without
Django.
"""

__version__ = "0.1.0"
