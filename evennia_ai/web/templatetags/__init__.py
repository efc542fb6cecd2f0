"""Template filters of the dashboard (``{% load ai_format %}``)."""
