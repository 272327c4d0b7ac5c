"""The test protocol (tests/results.sh) for the Python tests: "ok - ..." /
"FAIL - ..." / "SKIP - ..." lines, the human "N passed, N failed, N skipped"
line and the total row of the results file $ML_RESULTS, even when main raises
(which then fails the run)."""
import os
import sys


def write_results(passed, failed, skipped):
    """The end of every Python test: the human line and the results file."""
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    path = os.environ.get("ML_RESULTS")
    if path:
        with open(path, "w") as f:
            f.write(f"total\t{passed}\t{failed}\t{skipped}\t-\n")


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
            write_results(self.passed, self.failed, self.skipped)
        sys.exit(1 if self.failed else 0)
