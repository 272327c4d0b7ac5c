"""The test protocol of tests/run_tests.sh for the Python tests that count
single checks: "ok - ..." / "FAIL - ..." / "SKIP - ..." lines, then the
"#summary" line, even when main raises (which then fails the run)."""
import sys


class Checks:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def report(self, ok, what):
        if ok:
            self.passed += 1
            print(f"ok - {what}")
        else:
            self.failed += 1
            print(f"FAIL - {what}")

    def skip(self, what):
        self.skipped += 1
        print(f"SKIP - {what}")

    def run(self, main):
        """Call main(), print the summary, exit 1 after any failure."""
        try:
            main()
        finally:
            print(f"#summary passed={self.passed} failed={self.failed} skipped={self.skipped}")
        sys.exit(1 if self.failed else 0)
