"""``airegistry``: the game's prompt registry exported to and imported from JSON files in the
game folder (or inline JSON). Re-exported by :mod:`evennia_ai.commands.prompts`.
"""

from __future__ import annotations

import os

from django.conf import settings

from evennia_ai.commands.base import (
    DEVELOPER_LOCK,
    AICommand,
    CommandError,
)
from evennia_ai.commands.prompt_common import (
    MAX_IMPORT_BYTES,
    esc,
    registry,
)


# -- airegistry ----------------------------------------------------------------------------------
def game_file(name: str) -> str:
    """The absolute path of a ``.json`` file named relative to the game directory.

    Raises:
        CommandError: Not a ``.json`` name, or a path outside the game directory.
    """

    name = (name or "").strip().strip("\"'")
    if not name.lower().endswith(".json") or "\x00" in name:
        raise CommandError(
            f"'{esc(name[:100])}' is not a .json file name (or inline JSON " "starting with '{')."
        )
    root = os.path.realpath(str(getattr(settings, "GAME_DIR", "") or os.getcwd()))
    path = os.path.realpath(os.path.join(root, os.path.normpath(name)))
    if os.path.commonpath([root, path]) != root:
        raise CommandError(
            f"'{esc(name[:100])}' is outside the game directory; " "give a path inside it."
        )
    return path


def shown_path(path: str) -> str:
    """``path`` relative to the game directory, for messages."""

    root = os.path.realpath(str(getattr(settings, "GAME_DIR", "") or os.getcwd()))
    return esc(os.path.relpath(path, root))


def render_import_summary(summary: dict) -> str:
    """Lines describing :meth:`PromptRegistry.import_json`'s summary."""
    verb = "would be" if summary.get("dry_run") else "were"
    lines = []
    for section in ("templates", "components", "static_overrides", "context_configs"):
        result = summary.get(section) or {}
        parts = [
            f"{outcome} {', '.join(map(esc, result.get(outcome) or []))}"
            for outcome in ("created", "replaced")
            if result.get(outcome)
        ]
        unchanged = len(result.get("unchanged") or [])
        if unchanged:
            parts.append(f"{unchanged} unchanged")
        if parts:
            lines.append(f"  {section}: " + "; ".join(parts))
    fewshots = summary.get("fewshot_examples") or {}
    if fewshots.get("added") or fewshots.get("removed"):
        lines.append(
            f"  few-shot examples: {fewshots.get('added', 0)} added, "
            f"{fewshots.get('removed', 0)} removed"
        )
    if not summary.get("changed"):
        return (
            "Nothing "
            + ("would change" if summary.get("dry_run") else "changed")
            + (": everything is already as given.\n" + "\n".join(lines) if lines else ".")
        )
    return f"These {verb} changed:\n" + "\n".join(lines)


class CmdAIRegistry(AICommand):
    """
    Export and import the prompt registry as JSON.

    Usage:
      airegistry/export [<file.json>]
      airegistry/import[/overwrite] <file.json or inline JSON>
      airegistry/dryrun[/overwrite] <file.json or inline JSON>

    Switches:
      export    - the whole registry (the game's templates, pluggable components,
                  static component changes, context customisations, few-shot
                  examples) as JSON: shown to you (its lines not wrapped, so
                  you can copy it), or written to a file.
      import    - import an export. All or nothing: anything invalid or in conflict
                  is refused with the reason and nothing changes.
      dryrun    - check an import and show what it would change; changes nothing.
      overwrite - with import/dryrun: replace entries that differ instead of
                  refusing; with export: replace an existing file. Few-shot
                  examples are appended, or replace the list with /overwrite.

    Files are relative to the game directory and must stay inside it and end in
    .json. Inline JSON starts with '{'.

    Examples:
      airegistry/export
      airegistry/export server/prompts.json
      airegistry/dryrun server/prompts.json
      airegistry/import/overwrite server/prompts.json
      airegistry/import {"fewshot_examples": [{"user": "Hi", "assistant": "Hi!"}]}
    """

    key = "airegistry"
    locks = DEVELOPER_LOCK
    switch_options = ("export", "import", "dryrun", "overwrite")

    def run(self):
        actions = [s for s in self.switches if s != "overwrite"]
        if len(actions) != 1:
            raise CommandError("Give one of /export, /import or /dryrun.\n" + self.usage())
        overwrite = "overwrite" in self.switches
        if actions[0] == "export":
            self.export(overwrite)
        else:
            self.import_(overwrite, dry_run=actions[0] == "dryrun")

    def export(self, overwrite: bool) -> None:
        text = registry().export_json()
        name = self.args.strip()
        if not name:
            self.msg(esc(text), wrap=False)  # JSON to copy: a line break would break a string
            return
        path = game_file(name)
        if os.path.exists(path) and not overwrite:
            raise CommandError(
                f"{shown_path(path)} exists; use |wairegistry/export/overwrite|n " "to replace it."
            )
        if not os.path.isdir(os.path.dirname(path)):
            raise CommandError(f"The folder of {shown_path(path)} does not exist.")
        temporary = path + ".tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            os.replace(temporary, path)
        except OSError as err:
            raise CommandError(
                f"Could not write {shown_path(path)}: {esc(err.strerror)}."
            ) from None
        self.msg(f"Exported the prompt registry to {shown_path(path)} ({len(text):,} characters).")

    def read_source(self) -> tuple[str, str]:
        """(JSON text, where it came from) for an import."""
        source = self.require(self.args, "file name or inline JSON")
        if source.startswith("{"):
            return source, "inline JSON"
        path = game_file(source)
        try:
            size = os.path.getsize(path)
            if size > MAX_IMPORT_BYTES:
                raise CommandError(
                    f"{shown_path(path)} is too big ({size:,} bytes; "
                    f"at most {MAX_IMPORT_BYTES:,})."
                )
            with open(path, encoding="utf-8") as handle:
                return handle.read(), shown_path(path)
        except FileNotFoundError:
            raise CommandError(f"No file {shown_path(path)} in the game directory.") from None
        except UnicodeDecodeError:
            raise CommandError(f"{shown_path(path)} is not UTF-8 text.") from None
        except OSError as err:
            raise CommandError(f"Could not read {shown_path(path)}: {esc(err.strerror)}.") from None

    def import_(self, overwrite: bool, dry_run: bool) -> None:
        text, origin = self.read_source()
        try:
            summary = registry().import_json(text, overwrite=overwrite, dry_run=dry_run)
        except ValueError as err:
            raise CommandError(f"Import of {origin} refused, nothing changed: {esc(err)}") from None
        head = f"Dry run of {origin} (nothing was changed). " if dry_run else f"Imported {origin}. "
        self.msg(head + render_import_summary(summary))
