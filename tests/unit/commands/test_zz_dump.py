from unit.commands.test_columns import TestEightyColumns, commands
import os

class TestDump(TestEightyColumns):
    def test_dump(self):
        by = {c.key: c for c in commands()}
        out = []
        for key, args in [(a.split(" ",1)[0].split("/")[0], a[len(a.split(" ",1)[0].split("/")[0]):]) for a in os.environ["DUMP"].split(";;")]:
            out.append(f"===== {key}{args}\n" + self.call(type(by[key])(), args))
        open("/tmp/cols/dump.txt","w").write("\n".join(out))
