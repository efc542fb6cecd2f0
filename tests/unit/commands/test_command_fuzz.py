"""Fuzzing every admin command with hostile arguments and switches.

Every command in :func:`evennia_ai.commands.cmdset.all_command_classes` (whatever is there when
the test runs) is called by a Developer with random switches and arguments: ``=``, ``/``,
``#dbrefs``, JSON fragments, markup, unicode, control characters and long strings, mixed with
the names of a real AI NPC, its memory block and its pending confirmation. Proven:

- no exception propagates out of a command and no traceback reaches the caller;
- no input reaches :class:`AICommand`'s generic exception handler (its "<key> failed: ... The
  server log has the details." reply means a bug, not a bad input: bad input must be refused
  with a :class:`CommandError` saying what is wrong);
- a player without the Builder permission can run none of them.

A failure names the command and the smallest input Hypothesis found.
"""

import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.commands import AICommandTestBase
from support.memory import use_keyword_memory

from evennia_ai.commands.cmdset import all_command_classes

EXAMPLES = int(os.environ.get("EVENNIA_AI_FUZZ_EXAMPLES", "40"))  # more: a deeper local run
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

NPC_NAME = "Innkeeper"
TOKENS = [
    NPC_NAME,
    "keeper",
    "innkeeper",
    "Char",
    "Char2",
    "#1",
    "#2",
    "#99999",
    "#-1",
    "#abc",
    "=",
    "==",
    "/",
    "//",
    ":",
    "::",
    ",",
    ";",
    "|",
    "&",
    "me",
    "here",
    "all",
    "*",
    "0",
    "1",
    "-1",
    "3.5",
    "1e309",
    "nan",
    "99999999999999999999999",
    "on",
    "off",
    "true",
    "{",
    "}",
    "[",
    "]",
    "{}",
    "[]",
    '{"a": 1}',
    '{"kind": "map"}',
    "[1, 2",
    '{"x":',
    "null",
    '"',
    "'",
    "\\",
    "|r",
    "|n",
    "|/",
    "%s",
    "{name}",
    "{{",
    "$You()",
    "\u202e",
    "\U0001f480",
    "\x00",
    "\x7f",
    "\x80",
    "\u0085",
    "\ufffd",
    "\t",
    "\n",
    "house_rules",
    "house_rules:notes",
    "Core",
    "ReadOnly",
    "Admin",
    "c_00000000",
    "goal_1_0",
    "tick_event",
    "execute_command",
    "SAFE_CHAIN",
    "DANGEROUS",
    "say",
    "23:00",
    "25:99",
    "x" * 300,
]
#: The tokens every switch of every command meets in the deterministic sweep: names that find
#: the NPC, a dbref, a bare "=", an assignment and something too long.
CORE = [NPC_NAME, "#1", "=", f"{NPC_NAME} = 1", f"{NPC_NAME} = {{", "", "x" * 300]
words = st.sampled_from(TOKENS) | st.text(max_size=12)
arguments = (
    st.lists(words, max_size=8).map(" ".join)
    | st.lists(words, max_size=8).map("".join)
    | st.text(max_size=60)
    | st.builds(
        lambda a, b: f"{a} = {b}",
        st.sampled_from([NPC_NAME, "keeper", "#1", ""]),
        st.lists(words, max_size=5).map(" ".join),
    )
    | st.sampled_from(["x" * 5000, NPC_NAME + " = " + "y" * 20000, "=" * 500, "/" * 200])
)
switch_junk = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-0123456789/=", max_size=8)

# The generic handler of AICommand.func: "<key> stopped on an internal error: ..."
# (wrapped to the client's width, so any whitespace between the words)
GENERIC_FAILURE = re.compile(r"stopped\s+on\s+an\s+internal\s+error", re.S)


class CommandFuzzTest(AICommandTestBase):
    npc_aliases = ("keeper",)

    def setUp(self):
        super().setUp()
        # Offline model, synchronous threads, keyword-only long-term memory in a temp folder.
        use_keyword_memory(self, EVENNIA_AI_MODEL="")
        self.calls = 0
        self.prepare_npc(self.npc)

    def ensure_npc(self):
        """The AI NPC (created again when a fuzzed command deleted it), with some state."""
        if self.npc is not None and self.npc.pk:
            return self.npc
        self.npc = self.make_npc(NPC_NAME, aliases=["keeper"])
        return self.prepare_npc(self.npc)

    def prepare_npc(self, npc):
        """Some state for the commands to act on: a memory block and a pending confirmation."""
        from evennia_ai.memory import block_admin
        from evennia_ai.tools.approvals import get_confirmation_queue

        block_admin.create_block(npc, "house_rules", content="No fighting.")
        get_confirmation_queue().add_entry(
            npc, "execute_command", {"arguments": {"command": "look"}}, reason="fuzz"
        )
        return npc

    def run_command(self, cls, text: str) -> str:
        """Run ``cls`` with ``text`` as a Developer; fail on a traceback or the generic handler."""
        self.ensure_npc()
        self.calls += 1
        try:
            output = self.call(cls(), text, caller=self.char1) or ""
        except Exception as err:
            raise AssertionError(
                f"{cls.key} {text[:300]!r} raised {type(err).__name__}: {str(err)[:300]}"
            ) from None
        assert "Traceback" not in output, f"{cls.key} {text[:300]!r} showed a traceback"
        assert not GENERIC_FAILURE.search(
            output
        ), f"{cls.key} {text[:300]!r} hit the generic exception handler: {output[:400]}"
        return output

    def fuzz(self, cls):
        switches = (
            st.sampled_from(tuple(cls.switch_options)) if cls.switch_options else st.nothing()
        )
        switch_lists = st.lists(switches | switch_junk, max_size=2)

        @FUZZ
        @given(switches=switch_lists, args=arguments)
        def prop(switches, args):
            prefix = "".join(f"/{s}" for s in switches)
            text = f"{prefix} {args}" if prefix else args
            self.run_command(cls, text)

        prop()

    def test_every_command_survives_hostile_input(self):
        classes = all_command_classes()
        assert classes, "no admin commands are registered"
        for cls in classes:
            with self.subTest(command=cls.key):
                self.fuzz(cls)
        assert self.calls >= len(classes) * EXAMPLES // 2, self.calls

    def test_every_switch_with_each_token(self):
        """Deterministic sweep: every token reaches every command, the switches taking the
        tokens in turn (a different turn for each command), and every switch meets the
        :data:`CORE` tokens. (Each switch with each token, the sweep's old form, cost 20 s a
        run for little more: the random test above mixes them too.)"""
        sweep = TOKENS + [f"{NPC_NAME} = {t}" for t in TOKENS[:20]]
        for turn, cls in enumerate(all_command_classes()):
            switches = (None, *cls.switch_options)
            pairs = [(switches[(turn + i) % len(switches)], t) for i, t in enumerate(sweep)]
            pairs += [(switch, token) for switch in switches for token in CORE]
            for switch, token in pairs:
                text = f"/{switch} {token}" if switch else token
                with self.subTest(command=cls.key, input=text[:80]):
                    self.run_command(cls, text)

    def test_players_cannot_run_any(self):
        player = self.char2
        player.account.permissions.clear()
        player.account.permissions.add("Player")
        player.permissions.clear()
        for cls in all_command_classes():
            with self.subTest(command=cls.key):
                assert not cls().access(player, "cmd"), f"a Player may run {cls.key}"
                assert cls().access(self.char1, "cmd"), f"a Developer may not run {cls.key}"


class _Broken:
    """A command with a bug, to prove the harness notices one."""

    @staticmethod
    def make():
        from evennia_ai.commands.base import AICommand

        class CmdBroken(AICommand):
            """
            A broken command.

            Usage:
              broken <anything>
            """

            key = "broken"
            switch_options = ("boom",)

            def run(self):
                if "boom" in self.switches:
                    raise ZeroDivisionError("division by zero")
                self.msg("fine")

        return CmdBroken


class TestHarness(CommandFuzzTest):
    test_every_command_survives_hostile_input = None
    test_every_switch_with_each_token = None
    test_players_cannot_run_any = None

    def test_the_harness_catches_the_generic_handler(self):
        cls = _Broken.make()
        assert self.run_command(cls, "anything") == "fine"
        try:
            self.run_command(cls, "/boom x")
        except AssertionError as err:
            assert "generic exception handler" in str(err) and "/boom x" in str(err)
        else:
            raise AssertionError("the harness missed a command that hit the generic handler")
