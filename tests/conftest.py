"""Shared pytest setup: Evennia initialised once, inside pytest-django's database unblock."""

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from pytest_django.plugin import blocking_manager_key

    manager = config.stash.get(blocking_manager_key, None)
    if manager is not None:
        with manager.unblock():
            import evennia

            evennia._init()
    else:  # pragma: no cover - pytest-django not active
        import evennia

        evennia._init()
