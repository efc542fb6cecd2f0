"""The A/B driver (``bench/ab.py``): reading the benchmarks' tables, the medians and changes,
the mirror that runs this checkout's benchmarks on another checkout's package."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import ab  # noqa: E402
from bench.common import table  # noqa: E402


def run_output(ours_p50: float, theirs_p50: float, look_p99: str = "p50 3.0, p99 12.5") -> str:
    return (
        "some log line\n"
        + table(
            "quiet host: reply minus the 200 ms model latency (ms), memory mode hybrid",
            ["NPC", "replies", "p50", "p95"],
            [
                ["Evennia LLMNPC", 40, theirs_p50, 20.0],
                ["evennia-ai Innkeeper", 40, ours_p50, 60.0],
                ["result", "", "pass", "FAIL"],
            ],
        )
        + "\nLoad average 1.0 at the start.\n\n"
        + table(
            "Scale (bench.scale)",
            ["figure", "measured", "target"],
            [["look, ms", look_p99, "p99 <= 50: pass"]],
        )
    )


class TestReading:
    def test_cells_give_their_numbers_by_name(self):
        assert ab.cell_numbers("p50", "12.50") == {"p50": 12.5}
        assert ab.cell_numbers("value", "1,234 MB") == {"value": 1234.0}
        assert ab.cell_numbers("value", "+3.1% (400 MB)") == {"value": 3.1}
        assert ab.cell_numbers("measured", "p50 1.2, p99 4.5 (200 looks)") == {
            "measured p50": 1.2,
            "measured p99": 4.5,
        }
        assert ab.cell_numbers("result", "pass") == {}

    def test_every_table_row_and_column_is_read(self):
        figures = ab.parse_tables(run_output(45.0, 12.0))
        title = "quiet host: reply minus the # ms model latency (ms), memory mode hybrid"
        assert figures[(title, "evennia-ai Innkeeper", "p50")] == 45.0
        assert figures[(title, "Evennia LLMNPC", "replies")] == 40.0
        assert (title, "result", "p50") not in figures  # words are no figure
        assert figures[("Scale (bench.scale)", "look, ms", "measured p99")] == 12.5

    def test_numbers_in_titles_and_rows_do_not_split_a_figure(self):
        one = ab.parse_tables(table("drift over 9000 ticks", ["x", "v"], [["100 NPCs", "1"]]))
        two = ab.parse_tables(table("drift over 9500 ticks", ["x", "v"], [["100 NPCs", "2"]]))
        assert one.keys() == two.keys()


class TestSummary:
    def runs(self):
        return {
            ("npc_ab", "old"): [
                run_output(40.0, 12.0),
                run_output(50.0, 13.0),
                run_output(45.0, 14.0),
            ],
            ("npc_ab", "new"): [
                run_output(18.0, 12.0),
                run_output(20.0, 12.5),
                run_output(22.0, 13.0),
            ],
        }

    def test_medians_and_change(self):
        figures = ab.collect(self.runs())
        ours = [f for f in figures if f.key[1] == "evennia-ai Innkeeper" and f.key[2] == "p50"][0]
        assert (ours.old_median, ours.new_median) == (45.0, 20.0)
        assert ours.change == pytest.approx(-55.56, abs=0.01)
        text = ab.summary(figures, match="Innkeeper / p50")
        assert "| npc_ab |" in text and "| 45.00 | 20.00 | -55.6% | 3 / 3 |" in text
        assert "LLMNPC" not in text

    def test_a_figure_missing_on_one_side_is_left_out(self):
        runs = self.runs()
        runs[("npc_ab", "new")] = ["no table: the run crashed"]
        assert ab.collect(runs) == []

    def test_runs_are_read_back_from_their_files(self, tmp_path):
        for side, runs in (("old", [run_output(40.0, 12.0)]), ("new", [run_output(20.0, 12.0)])):
            (tmp_path / f"npc_ab-mode-busy.{side}.1.txt").write_text(runs[0])
        (tmp_path / "notes.txt").write_text("ignored")
        read = ab.read_runs(tmp_path)
        assert set(read) == {("npc_ab-mode-busy", "old"), ("npc_ab-mode-busy", "new")}


def test_spec_keeps_arguments_and_a_file_label():
    spec = ab.Spec.parse("bench.npc_ab --mode busy")
    assert (spec.name, spec.args, spec.label) == ("npc_ab", ["--mode", "busy"], "npc_ab-mode-busy")
    assert ab.Spec.parse("scale --quick").label == "scale-quick"


def test_overlay_runs_these_benchmarks_on_the_other_package(tmp_path):
    tree = tmp_path / "old"
    (tree / "evennia_ai").mkdir(parents=True)
    (tree / "evennia_ai" / "__init__.py").write_text("OLD = True\n")
    (tree / "bench").mkdir()
    (tree / "bench" / "game.py").write_text("old bench\n")
    (tree / "tests" / "support").mkdir(parents=True)
    (tree / "tests" / "evennia_ai_test_settings.py").write_text("OLD_SETTINGS = 1\n")
    (tree / "world_example").mkdir()
    here = Path(ab.__file__).resolve().parents[1]
    mirror = ab.overlay(tree, here, tmp_path / "mirror")
    assert (mirror / "evennia_ai").resolve() == (tree / "evennia_ai").resolve()
    assert (mirror / "world_example").is_symlink()
    assert not (mirror / "bench").is_symlink()
    assert (mirror / "bench" / "game.py").read_text() == (here / "bench" / "game.py").read_text()
    assert (mirror / "tests" / "support" / "game_server.py").exists()
    assert (mirror / "tests" / "evennia_ai_test_settings.py").read_text() == "OLD_SETTINGS = 1\n"
    assert (mirror / "tests" / "__init__.py").exists()
    assert not (mirror / "bench" / "RESULTS.md").exists()
