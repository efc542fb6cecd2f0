"""Memory blocks: labelled, typed, permissioned pieces of an assistant's memory (pure).

A memory block is a plain dict kept in the NPC's ``blocks`` Attribute (category ``ai``), keyed
by label::

    {"notes": {"label": "notes", "type": "Working", "permission": "ReadWrite",
               "schema": {"kind": "text", "viewport": None}, "description": "What I noted",
               "pinned": False, "content": "The well is dry.", "shared_with": {"12": "append"},
               "created": "2026-01-01T12:00:00Z", "updated": "2026-01-01T12:05:00Z"}}

**Types** decide when a block is in context (:func:`blocks_for_context`): ``Core`` always;
``Working``, ``Log`` and ``Archival`` when pinned, otherwise (ephemeral) only in a tick whose
event text or tool result names the block's label.

**Permissions** bound what the *model* may do (:func:`decide`); operator and system writes
(``is_system=True``) bypass them, and bypass read-only fields and sections too:

=========  ==============================================================================
ReadOnly   nothing
Append     appends only (``append_text``, ``append_to_list_field``, ``push_item``,
           ``append_log_entry``)
ReadWrite  everything but deletions (the default)
Admin      everything, deletions included
Partner    like ReadWrite, but each write waits for the owning NPC's operator to confirm
Human      like Partner (a human, rather than a partner agent, approves)
=========  ==============================================================================

**Schemas** (plain dicts, :func:`normalise_schema`) shape the content and its rendering:

- ``{"kind": "text", "viewport": {"start": 0, "lines": 40} | None}``: a string; a viewport
  shows a window of a long text's lines.
- ``{"kind": "map", "fields": [{"name", "type", "read_only", "description"}]}``: a dict of
  fields. Field types: ``any`` (default), ``text``, ``number``, ``counter``, ``boolean``,
  ``list``. With no fields declared the map is free-form; with fields, only those exist.
- ``{"kind": "list", "max_items": 20 | None, "item_type": "any", "style": "numbered"}``: a
  list (``style`` ``checkbox`` renders dict items with a ``done`` flag as ``[x]``/``[ ]``).
- ``{"kind": "log", "display_limit": 10, "max_entries": 200}``: entries ``{"timestamp",
  "message", ...}``, rendered newest first, at most ``display_limit`` of them; storage keeps
  the newest ``max_entries``.
- ``{"kind": "composite", "sections": [{"name", "schema", "read_only", "description"}]}``:
  a dict section name -> section content, each section with its own (non-composite) schema.

**Operations** (:data:`OPS`, :func:`apply_op`), one per kind of edit: ``set_text``,
``append_text``, ``replace_text`` (text); ``set_field``, ``set_text_field``,
``append_to_list_field``, ``increment_counter``, ``delete_field`` (map); ``push_item``,
``insert_item``, ``delete_item`` (list); ``append_log_entry`` (log). On a composite block,
any of them takes ``section`` in its arguments and applies to that section. Every function
returns new data and never changes its arguments; what the model got wrong comes back as a
failed :class:`BlockOpResult`, never an exception.

**Concurrency**: an operation is data (``op`` + ``args``), not a snapshot of the block, so the
glue applies it to a *fresh* read of the blocks and writes once; an operator's edit of one
field and a model's edit of another both survive.

**Archival entries** (``archival`` Attribute, a list) sit beside the blocks:
``{"id": "a_1a2b3c4d", "content": str, "metadata": dict, "created": iso}``.
:func:`search_archival` is a simple keyword-overlap ranking meant to be replaced by a better
search with the same signature.

Example:
    blocks = create_block({}, "profile", type="Core", schema={"kind": "map", "fields": [
        {"name": "status", "read_only": True}, {"name": "mood", "type": "text"}]})
    block, result = apply_op(blocks["profile"], "set_text_field",
                             {"field": "mood", "text": "cheerful"}, is_system=False)
    render_block(block)   # '<block:profile permission="ReadWrite">\\nstatus [read-only]:\\n...'
"""

from __future__ import annotations

import copy
import math
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from evennia_ai.utils import iso_utc
from evennia_ai.wording import ARCHIVE_HEADING

# -- vocabulary ----------------------------------------------------------------------------------
BLOCK_TYPES = ("Core", "Working", "Archival", "Log")
PERMISSIONS = ("ReadOnly", "Partner", "Human", "Append", "ReadWrite", "Admin")
DEFAULT_PERMISSION = "ReadWrite"
DEFAULT_TYPE = "Working"
SCHEMA_KINDS = ("text", "map", "list", "log", "composite")
FIELD_TYPES = ("any", "text", "number", "counter", "boolean", "list")
ITEM_TYPES = ("any", "text", "number", "object")
LIST_STYLES = ("numbered", "checkbox")
SHARE_MODES = ("read", "append")

# op -> the schema kind it applies to
OPS: dict[str, str] = {
    "set_text": "text",
    "append_text": "text",
    "replace_text": "text",
    "set_field": "map",
    "set_text_field": "map",
    "append_to_list_field": "map",
    "increment_counter": "map",
    "delete_field": "map",
    "push_item": "list",
    "insert_item": "list",
    "delete_item": "list",
    "append_log_entry": "log",
}
APPEND_OPS = frozenset({"append_text", "append_to_list_field", "push_item", "append_log_entry"})
DELETE_OPS = frozenset({"delete_item", "delete_field"})

# decide() outcomes
ALLOW, DENY, CONFIRM = "allow", "deny", "confirm"
# BlockOpResult statuses
APPLIED, PENDING, DENIED, INVALID = "applied", "pending", "denied", "invalid"

# Bounds: an Attribute is pickled whole on every write and a block is paid for in every prompt.
MAX_LABEL = 64
MAX_TEXT = 20_000
MAX_VALUE_CHARS = 4_000
DEFAULT_MAX_ITEMS = 200
DEFAULT_DISPLAY_LIMIT = 10
DEFAULT_MAX_LOG_ENTRIES = 200
MAX_DESCRIPTION = 500
MAX_ARCHIVAL_CHARS = 4_000
DEFAULT_MAX_ARCHIVAL = 1_000
EMPTY = "(empty)"

_LABEL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_TYPE_RANK = {name: rank for rank, name in enumerate(BLOCK_TYPES)}


class BlockError(ValueError):
    """An operator-level request on blocks was invalid; the message says what to fix."""


@dataclass
class BlockOpResult:
    """The outcome of one block operation.

    Attributes:
        status: ``applied``, ``pending`` (valid, but awaits an operator's confirmation),
            ``denied`` (the permission forbids it) or ``invalid`` (bad op or arguments).
        message: What happened, or what went wrong (readable by the model).
        data: Details (the label, the op, the new value, ...).
        suggestion: On failure, what to do instead.
    """

    status: str
    message: str
    data: dict = field(default_factory=dict)
    suggestion: str | None = None

    @property
    def success(self) -> bool:
        """Whether the block was changed."""
        return self.status == APPLIED

    def to_dict(self) -> dict:
        """JSON-able form for a tool result."""
        if self.status == APPLIED:
            return {"success": True, "message": self.message, **self.data}
        out: dict[str, Any] = {"success": False, "status": self.status, "error": self.message}
        if self.suggestion:
            out["suggestion"] = self.suggestion
        out.update(self.data)
        return out


def _invalid(message: str, suggestion: str | None = None, **data) -> BlockOpResult:
    return BlockOpResult(INVALID, message, dict(data), suggestion)


def _denied(message: str, suggestion: str | None = None, **data) -> BlockOpResult:
    return BlockOpResult(DENIED, message, dict(data), suggestion)


class _OpError(Exception):
    """Raised inside an operation to abort it with an invalid result."""

    def __init__(self, message: str, suggestion: str | None = None):
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion


class _ReadOnlyField(_OpError):
    """A model tried to write a read-only map field (a denial, not a mistake)."""

    def __init__(self, name: str):
        super().__init__(f"Field '{name}' is read-only.")


# -- parsing names -------------------------------------------------------------------------------
def _pick(value: Any, choices: Iterable[str], what: str) -> str:
    choices = tuple(choices)
    text = str(value or "").strip().lower().replace("_", "").replace("-", "").replace(" ", "")
    for choice in choices:
        if choice.lower() == text:
            return choice
    raise BlockError(f"Unknown {what} '{value}'. Choose one of: {', '.join(choices)}.")


def parse_type(value: Any) -> str:
    """A block type from any case (``core`` -> ``Core``); raises BlockError when unknown."""
    return _pick(value, BLOCK_TYPES, "block type")


def parse_permission(value: Any) -> str:
    """A permission from any case or spacing (``read_write`` -> ``ReadWrite``)."""
    return _pick(value, PERMISSIONS, "permission")


def parse_share_mode(value: Any) -> str:
    """``read`` or ``append``."""
    return _pick(value, SHARE_MODES, "share mode")


def check_label(label: Any) -> str:
    """A valid label (letters, digits, ``_ . -``; at most 64), stripped; raises BlockError."""
    text = str(label or "").strip()
    if not text:
        raise BlockError("A block needs a label, e.g. 'notes' or 'shared_notes'.")
    if len(text) > MAX_LABEL or not _LABEL.match(text):
        raise BlockError(
            f"'{text}' is not a valid block label: use up to {MAX_LABEL} letters, digits, "
            "'_', '.' or '-', starting with a letter, digit or '_'."
        )
    return text


# -- plain values --------------------------------------------------------------------------------
MAX_NUMBER = 1e15
"""Largest magnitude a number in a block may reach (repeated increments stay finite)."""


def check_plain(value: Any, path: str = "value", depth: int = 0) -> None:
    """Raise _OpError unless ``value`` is small plain JSON-like data (safe in an Attribute)."""
    if depth > 5:
        raise _OpError(f"{path} is nested too deeply (at most 5 levels).")
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _OpError(f"{path} must be a finite number.")
        return
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise _OpError(
                f"{path} is too long ({len(value)} characters; at most {MAX_VALUE_CHARS})."
            )
        return
    if isinstance(value, (list, tuple)):
        if len(value) > DEFAULT_MAX_ITEMS:
            raise _OpError(f"{path} has too many items (at most {DEFAULT_MAX_ITEMS}).")
        for index, item in enumerate(value):
            check_plain(item, f"{path}[{index}]", depth + 1)
        return
    if isinstance(value, dict):
        if len(value) > 50:
            raise _OpError(f"{path} has too many keys (at most 50).")
        for key, item in value.items():
            if not isinstance(key, str):
                raise _OpError(f"{path} keys must be strings.")
            check_plain(item, f"{path}.{key}", depth + 1)
        return
    raise _OpError(f"{path} must be text, a number, true/false, a list or an object.")


def _is_number(value: Any) -> bool:
    """A finite int or float (bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


# -- schemas -------------------------------------------------------------------------------------
def _positive_int(value: Any, what: str, *, allow_none: bool = False, minimum: int = 1):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BlockError(f"{what} must be a whole number >= {minimum}, not {value!r}.")
    return value


def _normalise_field(raw: Any) -> dict:
    if isinstance(raw, str):
        raw = {"name": raw}
    if not isinstance(raw, dict) or not str(raw.get("name") or "").strip():
        raise BlockError(f"A map field needs a name, e.g. {{'name': 'status'}} (got {raw!r}).")
    ftype = _pick(raw.get("type") or "any", FIELD_TYPES, "field type")
    return {
        "name": str(raw["name"]).strip(),
        "type": ftype,
        "read_only": bool(raw.get("read_only", False)),
        "description": str(raw.get("description") or "").strip(),
    }


def normalise_schema(schema: Any, *, nested: bool = False) -> dict:
    """A complete schema dict from a kind name, a partial dict or None (text).

    Args:
        schema: ``None``, a kind name (``"map"``) or a dict with ``kind`` and options.
        nested: True for a composite's section (which may not itself be composite).

    Raises:
        BlockError: naming what is wrong.
    """
    if schema is None:
        schema = {"kind": "text"}
    elif isinstance(schema, str):
        schema = {"kind": schema}
    if not isinstance(schema, dict):
        raise BlockError(f"A schema is a kind name or a dict with 'kind', not {schema!r}.")
    kind = _pick(schema.get("kind") or "text", SCHEMA_KINDS, "schema kind")
    if kind == "text":
        viewport = schema.get("viewport")
        if viewport is not None:
            if not isinstance(viewport, dict):
                raise BlockError("A text viewport is {'start': line, 'lines': count}.")
            viewport = {
                "start": _positive_int(viewport.get("start", 0), "viewport start", minimum=0),
                "lines": _positive_int(viewport.get("lines", 40), "viewport lines"),
            }
        return {"kind": "text", "viewport": viewport}
    if kind == "map":
        fields = [_normalise_field(f) for f in schema.get("fields") or []]
        names = [f["name"] for f in fields]
        if len(set(names)) != len(names):
            raise BlockError(f"Map fields must have distinct names (got {names}).")
        return {"kind": "map", "fields": fields}
    if kind == "list":
        return {
            "kind": "list",
            "max_items": _positive_int(schema.get("max_items"), "max_items", allow_none=True),
            "item_type": _pick(schema.get("item_type") or "any", ITEM_TYPES, "item type"),
            "style": _pick(schema.get("style") or "numbered", LIST_STYLES, "list style"),
        }
    if kind == "log":
        return {
            "kind": "log",
            "display_limit": _positive_int(
                schema.get("display_limit", DEFAULT_DISPLAY_LIMIT), "display_limit"
            ),
            "max_entries": _positive_int(
                schema.get("max_entries", DEFAULT_MAX_LOG_ENTRIES), "max_entries"
            ),
        }
    # composite
    if nested:
        raise BlockError("A composite section cannot itself be composite.")
    sections = []
    for raw in schema.get("sections") or []:
        if not isinstance(raw, dict) or not str(raw.get("name") or "").strip():
            raise BlockError(f"A composite section needs a name and a schema (got {raw!r}).")
        sections.append(
            {
                "name": str(raw["name"]).strip(),
                "schema": normalise_schema(raw.get("schema"), nested=True),
                "read_only": bool(raw.get("read_only", False)),
                "description": str(raw.get("description") or "").strip(),
            }
        )
    if not sections:
        raise BlockError("A composite schema needs at least one section.")
    names = [s["name"] for s in sections]
    if len(set(names)) != len(names):
        raise BlockError(f"Composite sections must have distinct names (got {names}).")
    return {"kind": "composite", "sections": sections}


_FIELD_DEFAULTS = {"any": "", "text": "", "number": 0, "counter": 0, "boolean": False, "list": []}


def empty_content(schema: dict) -> Any:
    """The empty content of a (normalised) schema."""
    kind = schema["kind"]
    if kind == "text":
        return ""
    if kind == "map":
        return {f["name"]: copy.deepcopy(_FIELD_DEFAULTS[f["type"]]) for f in schema["fields"]}
    if kind in ("list", "log"):
        return []
    return {s["name"]: empty_content(s["schema"]) for s in schema["sections"]}


def _field_def(schema: dict, name: str) -> dict | None:
    for fdef in schema.get("fields", []):
        if fdef["name"] == name:
            return fdef
    return None


def _check_field_value(fdef: dict | None, name: str, value: Any) -> None:
    ftype = fdef["type"] if fdef else "any"
    if ftype == "text" and not isinstance(value, str):
        raise _OpError(f"Field '{name}' holds text; give a string.")
    if ftype in ("number", "counter") and not _is_number(value):
        raise _OpError(f"Field '{name}' holds a number; give a number.")
    if ftype == "counter" and not isinstance(value, int):
        raise _OpError(f"Field '{name}' is a counter; give a whole number.")
    if ftype == "boolean" and not isinstance(value, bool):
        raise _OpError(f"Field '{name}' is true or false.")
    if ftype == "list" and not isinstance(value, list):
        raise _OpError(f"Field '{name}' holds a list; give a list, or use append_to_list_field.")


def _check_item(schema: dict, item: Any) -> None:
    check_plain(item, "item")
    itype = schema.get("item_type", "any")
    if itype == "text" and not isinstance(item, str):
        raise _OpError("Items of this list are text; give a string.")
    if itype == "number" and not _is_number(item):
        raise _OpError("Items of this list are numbers; give a number.")
    if itype == "object" and not isinstance(item, dict):
        raise _OpError('Items of this list are objects; give an object, e.g. {"task": "..."}.')


def validate_content(schema: dict, content: Any) -> Any:
    """Return ``content`` checked against ``schema`` (filled with defaults); raises BlockError."""
    if content is None:
        return empty_content(schema)
    kind = schema["kind"]
    try:
        if kind == "text":
            if not isinstance(content, str):
                raise _OpError("A text block's content is a string.")
            if len(content) > MAX_TEXT:
                raise _OpError(
                    f"The text is too long ({len(content)} characters; at most {MAX_TEXT})."
                )
            return content
        if kind == "map":
            if not isinstance(content, dict):
                raise _OpError("A map block's content is a dict of fields.")
            out = empty_content(schema)
            for name, value in content.items():
                fdef = _field_def(schema, name)
                if schema["fields"] and fdef is None:
                    raise _OpError(f"Unknown field '{name}'; fields: {_field_names(schema)}.")
                check_plain(value, name)
                _check_field_value(fdef, name, value)
                out[str(name)] = copy.deepcopy(value)
            return out
        if kind == "list":
            if not isinstance(content, list):
                raise _OpError("A list block's content is a list.")
            limit = schema.get("max_items") or DEFAULT_MAX_ITEMS
            if len(content) > limit:
                raise _OpError(f"The list has {len(content)} items; at most {limit}.")
            for item in content:
                _check_item(schema, item)
            return copy.deepcopy(content)
        if kind == "log":
            if not isinstance(content, list):
                raise _OpError("A log block's content is a list of entries.")
            entries = [_log_entry(entry, None) for entry in content]
            return entries[-schema["max_entries"] :]
        if not isinstance(content, dict):
            raise _OpError("A composite block's content is a dict of sections.")
        out = empty_content(schema)
        for name, value in content.items():
            section = _section_def(schema, name)
            if section is None:
                raise _OpError(f"Unknown section '{name}'; sections: {_section_names(schema)}.")
            out[name] = validate_content(section["schema"], value)
        return out
    except _OpError as err:
        raise BlockError(err.message) from None


def _field_names(schema: dict) -> str:
    return ", ".join(f["name"] for f in schema.get("fields", [])) or "(none)"


def _section_def(schema: dict, name: Any) -> dict | None:
    for section in schema.get("sections", []):
        if section["name"] == name:
            return section
    return None


def _section_names(schema: dict) -> str:
    return ", ".join(s["name"] for s in schema.get("sections", []))


# -- blocks (operator level) ---------------------------------------------------------------------
def default_schema_for(block_type: str) -> dict:
    """The schema a block of ``block_type`` gets when none is given (Log -> log, else text)."""
    return normalise_schema({"kind": "log"} if block_type == "Log" else None)


def make_block(
    label: str,
    *,
    type: str = DEFAULT_TYPE,
    schema: Any = None,
    permission: str = DEFAULT_PERMISSION,
    description: str = "",
    pinned: bool = False,
    content: Any = None,
    now: datetime | None = None,
) -> dict:
    """A new, validated block dict (raises BlockError naming what is wrong)."""
    label = check_label(label)
    block_type = parse_type(type)
    norm = normalise_schema(schema) if schema is not None else default_schema_for(block_type)
    description = str(description or "").strip()
    if len(description) > MAX_DESCRIPTION:
        raise BlockError(f"The description is too long (at most {MAX_DESCRIPTION} characters).")
    stamp = iso_utc(now)
    return {
        "label": label,
        "type": block_type,
        "permission": parse_permission(permission),
        "schema": norm,
        "description": description,
        "pinned": bool(pinned),
        "content": validate_content(norm, content),
        "shared_with": {},
        "created": stamp,
        "updated": stamp,
    }


def create_block(
    blocks: dict | None,
    label: str,
    *,
    type: str = DEFAULT_TYPE,
    schema: Any = None,
    permission: str = DEFAULT_PERMISSION,
    description: str = "",
    pinned: bool = False,
    content: Any = None,
    now: datetime | None = None,
) -> dict:
    """Return ``blocks`` with a new block added (operator level).

    Args:
        blocks: The NPC's blocks (label -> block); not modified.
        label: Unique label.
        type: ``Core``, ``Working`` (default), ``Archival`` or ``Log`` (any case).
        schema: See :func:`normalise_schema`; default text (log for a Log block).
        permission: What the model may do (default ``ReadWrite``).
        description: Shown under the block's tag in the prompt.
        pinned: Always in context (Core blocks always are).
        content: Initial content, checked against the schema.
        now: Creation time (default: now).

    Raises:
        BlockError: The label exists or something is invalid.
    """
    out = copy.deepcopy(dict(blocks or {}))
    block = make_block(
        label,
        type=type,
        schema=schema,
        permission=permission,
        description=description,
        pinned=pinned,
        content=content,
        now=now,
    )
    if block["label"] in out:
        raise BlockError(f"A block called '{block['label']}' already exists.")
    out[block["label"]] = block
    return out


def get_block(blocks: dict | None, label: str) -> dict:
    """The block called ``label`` (a copy); raises BlockError listing the labels when missing."""
    block = (blocks or {}).get(str(label or "").strip())
    if block is None:
        known = ", ".join(sorted(blocks or {})) or "none"
        raise BlockError(f"No memory block called '{label}'. Blocks: {known}.")
    return copy.deepcopy(block)


def delete_block(blocks: dict | None, label: str) -> dict:
    """Return ``blocks`` without ``label`` (raises BlockError when missing)."""
    get_block(blocks, label)
    out = copy.deepcopy(dict(blocks))
    del out[str(label).strip()]
    return out


def configure_block(
    blocks: dict | None, label: str, *, now: datetime | None = None, **changes
) -> dict:
    """Return ``blocks`` with one block's settings changed (operator level).

    Keyword Args:
        type, permission, pinned, description: New values.
        secret: Whether the block's text is secret: the NPC knows it but never says it.
        schema: A new schema; the content must fit it (else BlockError).

    Raises:
        BlockError: Unknown label, setting or value.
    """
    block = get_block(blocks, label)
    for key, value in changes.items():
        if key == "type":
            block["type"] = parse_type(value)
        elif key == "permission":
            block["permission"] = parse_permission(value)
        elif key == "pinned":
            block["pinned"] = bool(value)
        elif key == "secret":
            block["secret"] = bool(value)
        elif key == "description":
            text = str(value or "").strip()
            if len(text) > MAX_DESCRIPTION:
                raise BlockError(
                    f"The description is too long (at most {MAX_DESCRIPTION} characters)."
                )
            block["description"] = text
        elif key == "schema":
            schema = normalise_schema(value)
            block["content"] = validate_content(schema, block.get("content"))
            block["schema"] = schema
        else:
            raise BlockError(
                f"Unknown block setting '{key}'; use type, permission, pinned, secret, "
                "description or schema."
            )
    block["updated"] = iso_utc(now)
    out = copy.deepcopy(dict(blocks))
    out[block["label"]] = block
    return out


def share_block(blocks: dict | None, label: str, npc_id: Any, mode: str | None) -> dict:
    """Return ``blocks`` with ``label`` shared with ``npc_id`` (``read``/``append``; None unshares)."""
    block = get_block(blocks, label)
    shared = dict(block.get("shared_with") or {})
    if mode is None:
        shared.pop(str(npc_id), None)
    else:
        shared[str(npc_id)] = parse_share_mode(mode)
    block["shared_with"] = shared
    out = copy.deepcopy(dict(blocks))
    out[block["label"]] = block
    return out


# -- permissions ---------------------------------------------------------------------------------
def decide(permission: str, op: str) -> str:
    """Whether a *model* may run ``op`` under ``permission``: ``allow``, ``deny`` or ``confirm``.

    An unknown permission denies everything (a corrupted block fails closed).
    """
    if permission not in PERMISSIONS:
        return DENY
    if permission == "Admin":
        return ALLOW
    if permission == "ReadOnly":
        return DENY
    if permission == "Append":
        return ALLOW if op in APPEND_OPS else DENY
    if op in DELETE_OPS:
        return DENY
    if permission in ("Partner", "Human"):
        return CONFIRM
    return ALLOW  # ReadWrite


def allowed_ops(permission: str, kind: str | None = None) -> list[str]:
    """Ops a model may run (or ask for) under ``permission``, optionally for one schema kind."""
    kinds = {kind} if kind and kind != "composite" else set(SCHEMA_KINDS)
    return [
        op for op, op_kind in OPS.items() if op_kind in kinds and decide(permission, op) != DENY
    ]


def effective_permission(block: dict, share_mode: str | None = None) -> str:
    """The permission a model has on ``block``: its own, or as bounded by a share.

    A ``read`` share gives ReadOnly; an ``append`` share gives Append, unless the block is
    ReadOnly (stays ReadOnly) or needs confirmation (Partner/Human stay, so the owner's
    operator confirms every write).
    """
    permission = block.get("permission") or DEFAULT_PERMISSION
    if share_mode is None:
        return permission
    if share_mode != "append" or permission == "ReadOnly":
        return "ReadOnly"
    if permission in ("Partner", "Human"):
        return permission
    return "Append"


def _deny_message(permission: str, op: str, label: str) -> BlockOpResult:
    if permission == "ReadOnly":
        return _denied(f"Memory block '{label}' is read-only; you cannot change it.")
    if op in DELETE_OPS and permission != "Append":
        return _denied(
            f"Deleting in memory block '{label}' needs Admin permission " f"(it has {permission})."
        )
    options = ", ".join(allowed_ops(permission)) or "none"
    return _denied(
        f"Memory block '{label}' has {permission} permission: '{op}' is not allowed.",
        suggestion=f"Allowed here: {options}.",
    )


# -- operations ----------------------------------------------------------------------------------
def apply_op(
    block: dict,
    op: str,
    args: dict | None,
    *,
    is_system: bool,
    permission: str | None = None,
    author: str | None = None,
    now: datetime | None = None,
) -> tuple[dict, BlockOpResult]:
    """Apply one operation to a copy of ``block``.

    Args:
        block: The block dict (not modified).
        op: One of :data:`OPS`.
        args: The op's arguments (``section`` selects a composite's section).
        is_system: Operator/system write: bypasses permissions and read-only fields/sections.
        permission: The model's effective permission (default: the block's own; see
            :func:`effective_permission` for shared blocks).
        author: Who writes, when not the owner: appends are attributed to them.
        now: Time of the write (default: now).

    Returns:
        ``(new_block, result)``. Unless ``result.status`` is ``applied``, ``new_block`` equals
        ``block``; ``pending`` means the op is valid but awaits confirmation.
    """
    label = block.get("label", "?")
    args = dict(args or {})
    if op not in OPS:
        return copy.deepcopy(block), _invalid(
            f"Unknown block operation '{op}'.", suggestion="Operations: " + ", ".join(OPS)
        )
    perm = permission or block.get("permission") or DEFAULT_PERMISSION
    verdict = ALLOW if is_system else decide(perm, op)
    if verdict == DENY:
        return copy.deepcopy(block), _deny_message(perm, op, label)
    new = copy.deepcopy(block)
    schema = new.get("schema") or normalise_schema(None)
    section_name = args.pop("section", None)
    try:
        if schema["kind"] == "composite":
            if section_name in (None, ""):
                raise _OpError(
                    f"Memory block '{label}' has sections; say which one.",
                    f"Sections: {_section_names(schema)}.",
                )
            section = _section_def(schema, section_name)
            if section is None:
                raise _OpError(
                    f"Memory block '{label}' has no section '{section_name}'.",
                    f"Sections: {_section_names(schema)}.",
                )
            if section["read_only"] and not is_system:
                return copy.deepcopy(block), _denied(
                    f"Section '{section_name}' of memory block '{label}' is read-only."
                )
            content = dict(new.get("content") or {})
            current = content.get(section_name, empty_content(section["schema"]))
            content[section_name], message, data = _run(
                section["schema"], current, op, args, is_system, author, now
            )
            new["content"] = content
            data = {"section": section_name, **data}
        else:
            if section_name not in (None, ""):
                raise _OpError(f"Memory block '{label}' has no sections; leave 'section' out.")
            new["content"], message, data = _run(
                schema, new.get("content"), op, args, is_system, author, now
            )
    except _ReadOnlyField as err:
        return copy.deepcopy(block), _denied(
            f"{err.message[:-1]} in memory block '{label}'.", label=label, op=op
        )
    except _OpError as err:
        return copy.deepcopy(block), _invalid(err.message, err.suggestion, label=label, op=op)
    data = {"label": label, "op": op, **data}
    if verdict == CONFIRM:
        return copy.deepcopy(block), BlockOpResult(
            PENDING,
            f"Memory block '{label}' has {perm} permission: this change waits for "
            "an operator's confirmation.",
            data,
        )
    new["updated"] = iso_utc(now)
    return new, BlockOpResult(APPLIED, message, data)


def _run(
    schema: dict,
    content: Any,
    op: str,
    args: dict,
    is_system: bool,
    author: str | None,
    now: datetime | None,
) -> tuple[Any, str, dict]:
    """Apply ``op`` to ``content`` of ``schema``; returns (content, message, data)."""
    kind = schema["kind"]
    if OPS[op] != kind:
        ops = ", ".join(o for o, k in OPS.items() if k == kind)
        raise _OpError(f"'{op}' does not apply to a {kind} block.", f"Use one of: {ops}.")
    handler = _HANDLERS[op]
    return handler(schema, copy.deepcopy(content), args, is_system, author, now)


def _arg(
    args: dict,
    name: str,
    *,
    kind: type | tuple | None = None,
    required: bool = True,
    default: Any = None,
) -> Any:
    if name not in args or args[name] is None:
        if required:
            raise _OpError(f"Missing argument '{name}'.")
        return default
    value = args[name]
    if kind is str and not isinstance(value, str):
        raise _OpError(f"'{name}' must be text.")
    if kind is int and (
        not _is_number(value) or (isinstance(value, float) and not value.is_integer())
    ):
        raise _OpError(f"'{name}' must be a whole number.")
    return int(value) if kind is int else value


def _attributed_text(text: str, author: str | None) -> str:
    return f"[{author}] {text}" if author else text


def _attributed_item(item: Any, author: str | None) -> Any:
    if not author:
        return item
    if isinstance(item, dict):
        return {**item, "by": author}
    if isinstance(item, str):
        return _attributed_text(item, author)
    return item


def _check_text_size(text: str) -> None:
    if len(text) > MAX_TEXT:
        raise _OpError(
            f"The text would be too long ({len(text)} characters; at most {MAX_TEXT}).",
            "Replace or shorten older parts first.",
        )


# text
def _set_text(schema, content, args, is_system, author, now):
    text = _arg(args, "text", kind=str)
    _check_text_size(text)
    return text, "Text set.", {"length": len(text)}


def _append_text(schema, content, args, is_system, author, now):
    text = _arg(args, "text", kind=str)
    if not text.strip():
        raise _OpError("There is nothing to append: the text is empty.")
    text = _attributed_text(text, author)
    current = content or ""
    # A model appends sentences: keep them apart unless it brought its own whitespace.
    joiner = "\n" if current and not current[-1].isspace() and not text[0].isspace() else ""
    new = current + joiner + text
    _check_text_size(new)
    return new, "Text appended.", {"length": len(new)}


def _replace_text(schema, content, args, is_system, author, now):
    old = _arg(args, "old", kind=str)
    new_text = _arg(args, "new", kind=str, required=False, default="")
    if not old:
        raise _OpError("Say which text to replace ('old' is empty).")
    current = content or ""
    count = current.count(old)
    if not count:
        raise _OpError(
            f"The text does not contain {old!r}.", "Copy the exact words to replace from the block."
        )
    new = current.replace(old, new_text)
    _check_text_size(new)
    return new, f"Replaced {count} occurrence{'s' if count != 1 else ''}.", {"replaced": count}


# map
def _map_field(schema: dict, args: dict, is_system: bool) -> tuple[str, dict | None]:
    name = _arg(args, "field", kind=str).strip()
    if not name:
        raise _OpError("Say which field ('field' is empty).")
    fdef = _field_def(schema, name)
    if schema["fields"] and fdef is None:
        raise _OpError(f"There is no field '{name}'.", f"Fields: {_field_names(schema)}.")
    if fdef and fdef["read_only"] and not is_system:
        raise _ReadOnlyField(name)
    return name, fdef


def _set_field(schema, content, args, is_system, author, now):
    name, fdef = _map_field(schema, args, is_system)
    if "value" not in args:
        raise _OpError("Missing argument 'value'.")
    value = args["value"]
    check_plain(value, name)
    _check_field_value(fdef, name, value)
    content = dict(content or {})
    content[name] = copy.deepcopy(value)
    return content, f"Field '{name}' set.", {"field": name, "value": value}


def _set_text_field(schema, content, args, is_system, author, now):
    name, fdef = _map_field(schema, args, is_system)
    text = _arg(args, "text", kind=str)
    if fdef and fdef["type"] not in ("text", "any"):
        raise _OpError(
            f"Field '{name}' holds {fdef['type']} values, not text.",
            "Use set_field with a value of the right type.",
        )
    check_plain(text, name)
    content = dict(content or {})
    content[name] = text
    return content, f"Field '{name}' set.", {"field": name, "value": text}


def _append_to_list_field(schema, content, args, is_system, author, now):
    name, fdef = _map_field(schema, args, is_system)
    if "item" not in args:
        raise _OpError("Missing argument 'item'.")
    item = _attributed_item(args["item"], author)
    check_plain(item, "item")
    content = dict(content or {})
    current = content.get(name)
    if fdef and fdef["type"] not in ("list", "any"):
        raise _OpError(f"Field '{name}' holds {fdef['type']} values, not a list.")
    if current in (None, ""):
        current = []
    if not isinstance(current, list):
        raise _OpError(f"Field '{name}' is not a list.", "Use set_field to replace it.")
    if len(current) >= DEFAULT_MAX_ITEMS:
        raise _OpError(f"Field '{name}' is full ({DEFAULT_MAX_ITEMS} items).")
    content[name] = current + [copy.deepcopy(item)]
    return content, f"Added to field '{name}'.", {"field": name, "items": len(content[name])}


def _increment_counter(schema, content, args, is_system, author, now):
    name, fdef = _map_field(schema, args, is_system)
    by = _arg(args, "by", required=False, default=1)
    if not _is_number(by):
        raise _OpError("'by' must be a number.")
    if fdef and fdef["type"] not in ("counter", "number", "any"):
        raise _OpError(f"Field '{name}' holds {fdef['type']} values, not a number.")
    if fdef and fdef["type"] == "counter" and int(by) != by:
        raise _OpError(f"Field '{name}' is a counter; increment it by a whole number.")
    content = dict(content or {})
    current = content.get(name)
    if current in (None, ""):
        current = 0
    if not _is_number(current):
        raise _OpError(f"Field '{name}' is not a number.", "Use set_field to replace it.")
    value = current + by
    if not _is_number(value) or abs(value) > MAX_NUMBER:
        raise _OpError(
            f"Field '{name}' would become {value}, past the largest number a block holds "
            f"({MAX_NUMBER:g}).",
            "Use set_field to start it again.",
        )
    if (
        isinstance(value, float)
        and value.is_integer()
        and isinstance(current, int)
        and (fdef is None or fdef["type"] != "number")
    ):
        value = int(value)
    content[name] = value
    return content, f"Field '{name}' is now {value}.", {"field": name, "value": value}


def _delete_field(schema, content, args, is_system, author, now):
    name, fdef = _map_field(schema, args, is_system)
    content = dict(content or {})
    if fdef is not None:
        content[name] = copy.deepcopy(_FIELD_DEFAULTS[fdef["type"]])  # declared fields stay
    elif name in content:
        del content[name]
    else:
        raise _OpError(f"There is no field '{name}'.")
    return content, f"Field '{name}' cleared.", {"field": name}


# list
def _list_limit(schema: dict) -> int:
    return schema.get("max_items") or DEFAULT_MAX_ITEMS


def _new_item(schema: dict, args: dict, author: str | None, items: list) -> Any:
    """The checked, attributed item to add to ``items`` (raises when missing, bad or full)."""
    if "item" not in args:
        raise _OpError("Missing argument 'item'.")
    item = _attributed_item(args["item"], author)
    _check_item(schema, item)
    if len(items) >= _list_limit(schema):
        raise _OpError(
            f"The list is full ({_list_limit(schema)} items).",
            "Delete an item first, or ask an operator to raise max_items.",
        )
    return copy.deepcopy(item)


def _push_item(schema, content, args, is_system, author, now):
    items = list(content or [])
    items.append(_new_item(schema, args, author, items))
    return items, f"Item added as number {len(items)}.", {"position": len(items)}


def _index(args: dict, size: int, *, inserting: bool) -> int:
    """The 0-based index from ``index`` (0-based, negative from the end) or ``position``
    (1-based, as the numbered rendering shows); errors speak in the caller's own terms."""
    top = size if inserting else size - 1
    if "position" in args and args["position"] is not None:
        position = _arg(args, "position", kind=int)
        if not 1 <= position <= top + 1:
            if top < 0:
                raise _OpError(f"There is no item {position}: the list is empty.")
            raise _OpError(f"Position {position} is out of range; valid: 1-{top + 1}.")
        return position - 1
    index = _arg(args, "index", kind=int)
    if index < 0:
        index += size + (1 if inserting else 0)
    if not 0 <= index <= top:
        if top < 0:
            raise _OpError(f"There is no item at index {args['index']}: the list is empty.")
        raise _OpError(f"Index {args['index']} is out of range; valid: 0-{top}.")
    return index


def _insert_item(schema, content, args, is_system, author, now):
    items = list(content or [])
    item = _new_item(schema, args, author, items)
    index = _index(args, len(items), inserting=True)
    items.insert(index, item)
    return items, f"Item inserted as number {index + 1}.", {"position": index + 1}


def _delete_item(schema, content, args, is_system, author, now):
    items = list(content or [])
    index = _index(args, len(items), inserting=False)
    removed = items.pop(index)
    return items, f"Item {index + 1} deleted.", {"removed": removed}


# log
def _log_entry(entry: Any, now: datetime | None, author: str | None = None) -> dict:
    if isinstance(entry, str):
        entry = {"message": entry}
    if not isinstance(entry, dict):
        raise _OpError("A log entry is a message or an object with 'message'.")
    check_plain(entry, "entry")
    out = {k: copy.deepcopy(v) for k, v in entry.items()}
    message = out.get("message")
    if not isinstance(message, str) or not message.strip():
        raise _OpError("A log entry needs a non-empty 'message'.")
    out["message"] = message.strip()
    if not isinstance(out.get("timestamp"), str) or not out["timestamp"].strip():
        out["timestamp"] = iso_utc(now)
    if author:
        out["by"] = author
    # timestamp first, message second: a stable, readable order in storage and rendering
    return {"timestamp": out.pop("timestamp"), "message": out.pop("message"), **out}


def _append_log_entry(schema, content, args, is_system, author, now):
    entry = args.get("entry")
    if entry is None:
        entry = {k: v for k, v in args.items() if k != "entry"}
        if not entry:
            raise _OpError("Missing argument 'entry' (or 'message').")
    entry = _log_entry(entry, now, author)
    entries = (list(content or []) + [entry])[-schema["max_entries"] :]
    return entries, "Log entry added.", {"entries": len(entries)}


_HANDLERS = {
    "set_text": _set_text,
    "append_text": _append_text,
    "replace_text": _replace_text,
    "set_field": _set_field,
    "set_text_field": _set_text_field,
    "append_to_list_field": _append_to_list_field,
    "increment_counter": _increment_counter,
    "delete_field": _delete_field,
    "push_item": _push_item,
    "insert_item": _insert_item,
    "delete_item": _delete_item,
    "append_log_entry": _append_log_entry,
}


# -- rendering -----------------------------------------------------------------------------------
def render_value(value: Any) -> str:
    """A field value or list item as prompt text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return ", ".join(render_value(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {render_value(v)}" for k, v in value.items())
    return str(value)


def _render_text(schema: dict, content: Any, start: int | None = None) -> str:
    text = content or ""
    viewport = schema.get("viewport")
    if viewport is None and start is None:
        return text if text.strip() else EMPTY
    lines = text.splitlines()
    count = viewport["lines"] if viewport else 40
    first = viewport["start"] if start is None else start
    if len(lines) <= count and first == 0:
        return text if text.strip() else EMPTY
    first = max(0, min(first, max(0, len(lines) - 1)))
    shown = lines[first : first + count]
    last = first + len(shown)
    note = (
        f"[lines {first + 1}-{last} of {len(lines)}]"
        if shown
        else f"[no lines; {len(lines)} in all]"
    )
    return "\n".join(shown + [note])


def _render_map(schema: dict, content: Any) -> str:
    content = content or {}
    declared = {f["name"]: f for f in schema.get("fields", [])}
    names = list(declared) + [n for n in content if n not in declared]
    lines = []
    for name in names:
        marker = " [read-only]" if declared.get(name, {}).get("read_only") else ""
        lines.append(f"{name}{marker}: {render_value(content.get(name))}".rstrip())
    return "\n".join(lines) if lines else EMPTY


def _render_item(item: Any) -> str:
    return render_value(item)


def _render_list(schema: dict, content: Any) -> str:
    items = list(content or [])
    if not items:
        return EMPTY
    lines = []
    for number, item in enumerate(items, start=1):
        if schema.get("style") == "checkbox":
            done = isinstance(item, dict) and bool(item.get("done"))
            rest = (
                {k: v for k, v in item.items() if k != "done"} if isinstance(item, dict) else item
            )
            lines.append(f"{number}. [{'x' if done else ' '}] {_render_item(rest)}")
        else:
            lines.append(f"{number}. {_render_item(item)}")
    return "\n".join(lines)


def _render_log(schema: dict, content: Any) -> str:
    entries = list(content or [])
    if not entries:
        return EMPTY
    limit = schema.get("display_limit") or DEFAULT_DISPLAY_LIMIT
    shown = list(reversed(entries))[:limit]
    lines = []
    for entry in shown:
        extras = {k: v for k, v in entry.items() if k not in ("timestamp", "message")}
        line = f"[{entry.get('timestamp', '')}] {entry.get('message', '')}"
        if extras:
            line += f" ({render_value(extras)})"
        lines.append(line)
    if len(entries) > limit:
        lines.append(f"({limit} newest of {len(entries)} entries)")
    return "\n".join(lines)


def render_content(schema: dict, content: Any, *, start: int | None = None) -> str:
    """Content as prompt text, as its schema says (see the module docstring).

    Args:
        schema: A normalised schema.
        content: The content.
        start: For text: show lines from this 0-based line (a viewport of the schema's size,
            or 40 lines), whatever the schema's own viewport says.
    """
    kind = schema.get("kind", "text")
    if kind == "text":
        return _render_text(schema, content, start)
    if kind == "map":
        return _render_map(schema, content)
    if kind == "list":
        return _render_list(schema, content)
    if kind == "log":
        return _render_log(schema, content)
    parts = []
    content = content or {}
    for section in schema.get("sections", []):
        marker = " [read-only]" if section["read_only"] else ""
        body = render_content(section["schema"], content.get(section["name"]))
        parts.append(f"=== {section['name']}{marker} ===\n{body}")
    return "\n\n".join(parts)


def _attr(value: str) -> str:
    return str(value).replace('"', "'").replace("\n", " ")


def render_block(
    block: dict,
    *,
    include_description: bool = True,
    shared_from: str | None = None,
    permission: str | None = None,
    start: int | None = None,
) -> str:
    """A block as the prompt shows it::

        <block:label permission="ReadWrite">
        Description

        content
        </block:label>

    Args:
        block: The block dict.
        include_description: Show the description under the tag.
        shared_from: Name of the NPC that shares it (adds ``shared_from="..."``).
        permission: The permission to show (default: the block's own; for a shared block,
            the reader's effective permission).
        start: For text blocks: first line of the viewport (see :func:`render_content`).
    """
    label = block.get("label", "?")
    perm = permission or block.get("permission") or DEFAULT_PERMISSION
    attrs = f' permission="{_attr(perm)}"'
    if shared_from:
        attrs += f' shared_from="{_attr(shared_from)}"'
    body = render_content(
        block.get("schema") or normalise_schema(None), block.get("content"), start=start
    )
    description = str(block.get("description") or "").strip()
    inner = f"{description}\n\n{body}" if include_description and description else body
    return f"<block:{label}{attrs}>\n{inner}\n</block:{label}>"


# -- context selection ---------------------------------------------------------------------------
def _mention_form(text: str) -> str:
    return " " + re.sub(r"[\W_]+", " ", (text or "").casefold()).strip() + " "


def is_mentioned(label: str, text: str) -> bool:
    """Whether ``text`` names ``label`` as whole words (``shared_notes`` ~ "shared notes")."""
    wanted = _mention_form(label).strip()
    return bool(wanted) and f" {wanted} " in _mention_form(text)


def in_context(block: dict, mentioned_text: str = "") -> bool:
    """Core and pinned blocks always; other (ephemeral) blocks when ``mentioned_text`` names them."""
    if block.get("type") == "Core" or block.get("pinned"):
        return True
    return is_mentioned(block.get("label", ""), mentioned_text)


def blocks_for_context(
    blocks: dict | Iterable[dict] | None, *, mentioned_text: str = ""
) -> list[dict]:
    """The blocks that belong in this tick's prompt.

    Order: Core blocks, then pinned ones, then the ephemeral ones named this tick (each group
    by type, then age), so the blocks present in every request form a stable prefix that a
    provider's prompt cache can reuse.

    Args:
        blocks: label -> block, or an iterable of blocks.
        mentioned_text: The tick's event text and tool result (ephemeral blocks named there
            are included).
    """
    items = list(blocks.values()) if isinstance(blocks, dict) else list(blocks or [])
    chosen = [b for b in items if in_context(b, mentioned_text)]
    order = {id(b): i for i, b in enumerate(items)}

    def key(block):
        group = 0 if block.get("type") == "Core" else 1 if block.get("pinned") else 2
        return group, _TYPE_RANK.get(block.get("type"), len(BLOCK_TYPES)), order[id(block)]

    return sorted(chosen, key=key)


def describe_block(
    block: dict, *, shared_from: str | None = None, permission: str | None = None
) -> dict:
    """A short summary of a block for listings (no content)."""
    schema = block.get("schema") or {}
    perm = permission or block.get("permission") or DEFAULT_PERMISSION
    out = {
        "label": block.get("label"),
        "type": block.get("type"),
        "permission": perm,
        "schema": schema.get("kind", "text"),
        "pinned": bool(block.get("pinned")),
        "description": block.get("description") or "",
        "allowed_ops": allowed_ops(perm, schema.get("kind")),
    }
    if schema.get("kind") == "composite":
        out["sections"] = [s["name"] for s in schema.get("sections", [])]
    if schema.get("kind") == "map" and schema.get("fields"):
        out["fields"] = [f["name"] for f in schema["fields"]]
    if shared_from:
        out["shared_from"] = shared_from
    return out


# -- archival entries ----------------------------------------------------------------------------
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be but by did do does for from had has have he her his how i if in is "
    "it its me my no not of on or our she so that the their them they this to was we were what "
    "when where which who why will with you your".split()
)


def keywords(text: str) -> set[str]:
    """The content words of ``text`` (lowercase, stop words dropped, a trailing 's' folded)."""
    out = set()
    for word in _WORD.findall((text or "").casefold()):
        if word in _STOPWORDS or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


def archival_insert(
    entries: list | None,
    content: str,
    *,
    metadata: dict | None = None,
    now: datetime | None = None,
    max_entries: int = DEFAULT_MAX_ARCHIVAL,
) -> tuple[list, BlockOpResult]:
    """Add an archival entry (newest last; the oldest beyond ``max_entries`` go).

    An entry whose text equals an existing one (ignoring case and spacing) is not added again.
    """
    text = " ".join(str(content or "").split())
    current = list(entries or [])
    if not text:
        return current, _invalid("There is nothing to archive: the content is empty.")
    if len(text) > MAX_ARCHIVAL_CHARS:
        return current, _invalid(
            f"The entry is too long ({len(text)} characters; at most " f"{MAX_ARCHIVAL_CHARS}).",
            "Split it into several entries.",
        )
    try:
        if metadata is not None and not isinstance(metadata, dict):
            raise _OpError("metadata must be an object.")
        check_plain(metadata or {}, "metadata")
    except _OpError as err:
        return current, _invalid(err.message)
    folded = text.casefold()
    for entry in current:
        if " ".join(str(entry.get("content", "")).split()).casefold() == folded:
            return current, BlockOpResult(
                APPLIED, "Already archived.", {"id": entry.get("id"), "duplicate": True}
            )
    entry = {
        "id": "a_" + uuid.uuid4().hex[:8],
        "content": text,
        "metadata": copy.deepcopy(metadata or {}),
        "created": iso_utc(now),
    }
    current.append(entry)
    dropped = max(0, len(current) - max_entries)
    current = current[dropped:]
    data = {"id": entry["id"], "entries": len(current)}
    if dropped:
        data["dropped_oldest"] = dropped
    return current, BlockOpResult(APPLIED, "Archived.", data)


def search_archival(entries: list | None, query: str, limit: int = 5) -> list[dict]:
    """Entries sharing the most content words with ``query``, best first (replaceable).

    Score: the share of the query's content words an entry contains (0-1); ties go to the
    newer entry. Entries sharing no word are not returned.

    Returns:
        Copies of the entries, each with a ``score``.
    """
    wanted = keywords(query)
    if not wanted or limit <= 0:
        return []
    scored = []
    for position, entry in enumerate(entries or []):
        text = entry.get("content", "") if isinstance(entry, dict) else str(entry)
        overlap = len(wanted & keywords(text))
        if overlap:
            scored.append((overlap / len(wanted), position, entry))
    scored.sort(key=lambda item: (-item[0], -item[1]))
    out = []
    for score, _position, entry in scored[:limit]:
        hit = copy.deepcopy(entry) if isinstance(entry, dict) else {"content": str(entry)}
        hit["score"] = round(score, 3)
        out.append(hit)
    return out


def archival_delete(entries: list | None, entry_id: str) -> tuple[list, BlockOpResult]:
    """Remove the entry with id ``entry_id``."""
    current = list(entries or [])
    wanted = str(entry_id or "").strip()
    kept = [e for e in current if str(e.get("id")) != wanted]
    if len(kept) == len(current):
        return current, _invalid(
            f"No archival entry with id '{entry_id}'.", "Search the archive to find the id."
        )
    return kept, BlockOpResult(APPLIED, "Archival entry deleted.", {"id": wanted})


def render_archival_hits(hits: list[dict], header: str = ARCHIVE_HEADING) -> str:
    """Archival hits as a prompt section ("" when none)."""
    lines = [
        f"- {hit.get('content', '')} (id {hit.get('id', '?')})"
        for hit in hits or []
        if str(hit.get("content", "")).strip()
    ]
    return header + "\n" + "\n".join(lines) if lines else ""
