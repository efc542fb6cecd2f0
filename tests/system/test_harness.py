"""The harness itself: Evennia initialises and a database-backed test can create objects."""

from evennia.utils.test_resources import BaseEvenniaTest


class TestHarness(BaseEvenniaTest):
    def test_objects_exist(self):
        self.assertTrue(self.char1.pk)
        self.assertEqual(self.char1.location, self.room1)
