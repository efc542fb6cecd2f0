"""All or nothing: one transaction outside the turn's batching, and the cached objects put
back as the database has them when it rolls back."""

from unittest import mock

import pytest
from django.db import transaction
from evennia.objects.models import ObjectDB
from evennia.objects.objects import DefaultObject
from evennia.utils.create import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai import attribute_writes
from evennia_ai.world.atomic import Touched, all_or_nothing, repair_after_rollback

pytestmark = pytest.mark.postgres  # transactions and rollbacks: also on PostgreSQL


class Boom(Exception):
    pass


class TestAllOrNothing(BaseEvenniaTest):
    def test_refresh_from_db_does_not_reload_idmapper_instances(self):
        """Why the repair exists: after a rollback the cached object still shows the write,
        and neither a fresh look-up nor ``refresh_from_db`` of the holder's contents puts it
        right. If Evennia changes this, this test says so."""
        with pytest.raises(Boom), transaction.atomic():
            self.obj1.move_to(self.char1, quiet=True)
            raise Boom
        stored = ObjectDB.objects.filter(pk=self.obj1.pk).values_list("db_location_id", flat=True)
        assert stored[0] == self.room1.id
        assert ObjectDB.objects.get(pk=self.obj1.pk) is self.obj1
        self.char1.refresh_from_db()
        assert self.obj1 in self.char1.contents  # the contents cache is still wrong
        assert self.obj1 not in self.room1.contents

    def test_a_rollback_repairs_locations_contents_and_attributes(self):
        self.char1.db.coins = 5
        attr = self.char1.attributes.get("coins", return_obj=True)
        touched = Touched()
        with pytest.raises(Boom), all_or_nothing(touched):
            touched.moved.append(self.obj1)
            touched.holders.update((self.room1, self.char1))
            self.obj1.move_to(self.char1, quiet=True)
            touched.attributes.append(attr)
            attr.value = 99
            raise Boom
        assert self.obj1.location == self.room1
        assert self.obj1 in self.room1.contents and self.obj1 not in self.char1.contents
        assert self.char1.db.coins == 5

    def test_objects_created_inside_are_dropped_from_the_cache(self):
        touched = Touched()
        with pytest.raises(Boom), all_or_nothing(touched):
            made = create_object(DefaultObject, key="nail", location=self.char1)
            touched.created.append(made)
            touched.holders.add(self.char1)
            pk = made.pk
            raise Boom
        assert not ObjectDB.objects.filter(pk=pk).exists()
        touched.moved.append(self.obj2)
        repair_after_rollback(touched)
        assert all(obj.key != "nail" for obj in self.char1.contents)

    def test_a_repair_that_fails_is_logged_and_never_raises(self):
        touched = Touched(moved=[self.obj1])
        with mock.patch.object(ObjectDB.objects, "filter", side_effect=RuntimeError("db gone")):
            repair_after_rollback(touched)  # no exception

    def test_immediate_turns_batching_off_inside_and_nests(self):
        with (
            mock.patch.object(attribute_writes, "reactor") as reactor,
            mock.patch.object(attribute_writes.threadable, "isInIOThread", return_value=True),
        ):
            reactor.running = True
            assert attribute_writes.batching()
            with attribute_writes.immediate():
                with attribute_writes.immediate():
                    assert not attribute_writes.batching()
                assert not attribute_writes.batching()
            assert attribute_writes.batching()
