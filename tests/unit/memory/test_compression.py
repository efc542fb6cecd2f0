"""History compression: thresholds, whole batches, active batch untouched, recursive summaries."""

from hypothesis import given, settings
from hypothesis import strategies as st

from evennia_ai.memory import compression as c


def history(batches, size=3):
    out = []
    for b in range(batches):
        out.append({"role": "user", "content": f"event {b}", "batch": b})
        out.append(
            {
                "role": "assistant",
                "content": None,
                "batch": b,
                "tool_calls": [
                    {
                        "id": f"c{b}",
                        "type": "function",
                        "function": {"name": "say", "arguments": "{}"},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"c{b}", "content": "ok", "batch": b})
    return out


def test_thresholds():
    assert c.compaction_reason(70, 100, asleep=True, tick=10, last_compaction_tick=None) == "sleep"
    assert c.compaction_reason(70, 100, asleep=False, tick=10, last_compaction_tick=None) is None
    assert (
        c.compaction_reason(80, 100, asleep=False, tick=10, last_compaction_tick=None)
        == "emergency"
    )
    # never on the very next tick after a compaction
    assert c.compaction_reason(95, 100, asleep=False, tick=11, last_compaction_tick=10) is None
    assert (
        c.compaction_reason(95, 100, asleep=False, tick=12, last_compaction_tick=10) == "emergency"
    )


def test_truncate_keeps_whole_recent_batches():
    h = history(10)
    kept, dropped = c.truncate(h, keep_recent=6)
    assert dropped == 24 and len(kept) == 6
    assert {m["batch"] for m in kept} == {8, 9}


def test_active_batch_is_never_compressed():
    h = history(10)
    kept, _ = c.truncate(h, keep_recent=0, active_batch=9)
    assert {m["batch"] for m in kept} == {9}


def test_summary_replaces_old_batches_and_merges_previous():
    calls = []

    def summarize(text):
        calls.append(text)
        return f"summary of {len(text)} chars"

    h = history(10)
    out, n = c.summarized_history(h, summarize, keep_recent=6)
    assert n == 24 and out[0]["batch"] == c.SUMMARY_BATCH
    assert out[0]["content"].startswith(c.SUMMARY_PREFIX)
    out2, _ = c.summarized_history(out + history(20)[30:], summarize, keep_recent=6)
    assert "Earlier summary" in calls[-1]
    assert sum(1 for m in out2 if m["batch"] == c.SUMMARY_BATCH) == 1


def test_recursive_summary_goes_round_until_it_fits():
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(200))
    rounds = []

    def summarize(chunk):
        rounds.append(len(chunk))
        return chunk[:40]

    out = c.recursive_summary(text, summarize, chunk_chars=1000)
    assert len(out) <= 1000 and max(rounds) <= 1000 and len(rounds) > 10


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 25), keep=st.integers(0, 40))
def test_truncate_never_splits_a_batch(n, keep):
    h = history(n)
    kept, dropped = c.truncate(h, keep_recent=keep)
    assert dropped + len(kept) == len(h)
    batches = {m["batch"] for m in kept}
    for b in batches:
        assert sum(1 for m in kept if m["batch"] == b) == 3
