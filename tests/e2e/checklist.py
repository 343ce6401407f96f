"""Named pass/fail checks for the e2e scripts that print one line per check and a summary."""


class Checklist:
    def __init__(self):
        self.results = []

    def __call__(self, name, condition, detail=""):
        self.results.append(bool(condition))
        print(("PASS " if condition else "FAIL ") + name + ("" if condition else f": {detail}"), flush=True)

    def exit_status(self):
        passed = sum(self.results)
        print(f"{passed} passed, {len(self.results) - passed} failed")
        return 0 if passed == len(self.results) else 1
