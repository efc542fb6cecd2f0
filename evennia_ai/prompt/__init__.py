"""How prompts are made: components, templates, contexts, execution pattern, sources, assembly and fitting to the window.

Modules are imported by name; this package re-exports nothing.
"""
