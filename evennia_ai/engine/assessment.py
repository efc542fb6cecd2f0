"""Task assessment: a short model call whose advice may only restrict the execution pattern.

With ``task_assessment_enabled`` in the NPC's execution config, the tick first asks the model
how much work the situation needs. The reply format (documented for operators and prompt
writers) is one JSON object::

    {"recommended_iterations": 2,            # 1-10
     "recommended_mode": "single_action",    # single_action | react_loop | plan_execute
     "recommend_confirm_dangerous": false}

Anything else in the reply is ignored; a reply that does not parse yields no advice. The advice
goes to :func:`~evennia_ai.prompt.execution_pattern.select_execution_pattern` as ``llm_assessment``,
which applies it restrict-only.
"""

from __future__ import annotations

import json
import logging
import re

from twisted.internet import defer

from evennia_ai.llm.contracts import ASSESSMENT_INSTRUCTION, render_task
from evennia_ai.utils import LOG_PREFIX

ASSESSMENT_PROMPT = render_task("assessment", ASSESSMENT_INSTRUCTION)

_MODES = {"single_action", "react_loop", "plan_execute"}
logger = logging.getLogger(__name__)
_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_assessment(text: str | None) -> dict:
    """Parse the model's assessment reply into a (possibly empty) assessment-advice dict."""
    if not text:
        return {}
    match = _OBJECT.search(text)
    if not match:
        return {}
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    advice: dict = {}
    iterations = data.get("recommended_iterations")
    if isinstance(iterations, (int, float)) and not isinstance(iterations, bool):
        advice["recommended_iterations"] = max(1, min(10, int(iterations)))
    mode = data.get("recommended_mode")
    if isinstance(mode, str) and mode.strip() in _MODES:
        advice["recommended_mode"] = mode.strip()
    confirm = data.get("recommend_confirm_dangerous")
    if isinstance(confirm, bool):
        advice["recommend_confirm_dangerous"] = confirm
    return advice


@defer.inlineCallbacks
def assess_task(
    client, messages: list[dict], model: str | None = None, usage=None, caller: str = LOG_PREFIX
):
    """Ask the model for assessment advice; fires with (advice dict, LLMResult).

    ``usage``: the tick's UsageAccountant, where the call is recorded (kind ``assessment``).
    ``caller``: who asks, as log lines start (``evennia_ai [Marta#12]``); a failed call is
    logged with it (the tick goes on without advice).
    """
    request = list(messages) + [{"role": "user", "content": ASSESSMENT_PROMPT}]
    result = yield client.complete(
        request, tools=None, model=model, kind="assessment", caller=caller
    )
    if usage is not None:
        usage.record_result(result, "assessment")
    if result.error:
        logger.warning(
            "%s: the assessment call to model %s failed (%s); the tick goes on without its advice",
            caller,
            result.model or model,
            result.error,
        )
        return {}, result
    return parse_assessment(result.text), result
