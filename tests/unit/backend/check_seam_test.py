#!/usr/bin/env python3
"""scripts/check-seam on small trees: what it must refuse, what it must let pass, and the allowlist
that may only shrink."""

import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "scripts" / "check-seam"


class CheckSeam(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.directory.name)
        self.allowlist = self.root / "allow"
        self.allowlist.write_text("")

    def tearDown(self):
        self.directory.cleanup()

    def write(self, relative, text):
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def run_check(self):
        result = subprocess.run([sys.executable, str(SCRIPT), "--root", str(self.root), "--allowlist",
                                 str(self.allowlist)], capture_output=True, text=True)
        return result.returncode, result.stderr

    def test_each_rule_fails_outside_the_backend(self):
        cases = {
            "openmp": "#include <omp.h>\n",
            "intrinsics": "__m512 v = _mm512_setzero_ps();\n",
            "team": "void f(backend::cpu::Team& team);\n",
            "bf16_bits": "std::vector<Bf16Bits> rows;\n",
            "staged_key_values": "StagedKeyValues staged;\n",
            "amx_layout": "x86::interleave_pairs(a, b);\n",
            "cpu_header": '#include "backend/cpu/linear.h"\n',
        }
        for rule, text in cases.items():
            with self.subTest(rule=rule):
                self.write("src/model/family.cpp", "int x;\n" + text)
                code, errors = self.run_check()
                self.assertEqual(code, 1)
                self.assertIn(f"src/model/family.cpp:2: breaks the backend seam ({rule})", errors)

    def test_the_backend_and_comments_may_name_anything(self):
        self.write("src/backend/cpu/team.cpp", "#include <omp.h>\n#pragma omp parallel\nBf16Bits b;\n")
        self.write("src/model/family.cpp", "// measured on AMX with Bf16Bits rows and a Team\n/* _mm512_add_ps */\n"
                   'const char* name = "Team";\n')
        self.assertEqual(self.run_check(), (0, ""))

    def test_a_listed_file_passes_and_a_clean_listed_rule_fails(self):
        self.write("src/model/family.cpp", "Bf16Bits b;\n")
        self.allowlist.write_text("# not migrated yet\nsrc/model/family.cpp bf16_bits\n")
        self.assertEqual(self.run_check()[0], 0)
        self.write("src/model/family.cpp", "float b;\n")
        code, errors = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn("src/model/family.cpp no longer breaks 'bf16_bits'", errors)

    def test_an_unknown_rule_in_the_allowlist_is_refused(self):
        self.allowlist.write_text("src/model/family.cpp threads\n")
        code, errors = self.run_check()
        self.assertEqual(code, 1)
        self.assertIn("expected 'PATH RULE...'", errors)


if __name__ == "__main__":
    unittest.main()
