"""commsched.load and commsched.import_trace (python/commsched/_import.py)
against the CLI on the same files: the same graph byte for byte, the same
located error, the same notes; warnings as TraceWarning.

usage: test_import.py SHARED_DATA_DIR KEPT_ASTRA_DIR CASES_DIR
(COMMSCHED_LIBRARY, COMMSCHED_CLI and PYTHONPATH set by ctest)."""

import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import commsched

CLI = os.environ.get("COMMSCHED_CLI")
SHARED, KEPT, CASES = sys.argv[1:4]
del sys.argv[1:4]

# (format, file under SHARED, CLI options, Python options)
TRACES = [
    ("astra", "astra-sim/Resnet50_DataParallel.txt", ["--npus", "16"],
     {"npus": 16}),
    ("chakra", "chakra/small_chakra.0.json", [], {}),
    ("chakra", "chakra-et/MLP_ModelParallel.0.et",
     ["--group-size", "world=4"], {"group_sizes": {"world": 4}}),
    ("kineto", "kineto/sampled_rank-1.json.gz", [], {}),
    ("kineto", "pytorch-et/benchmark_simple_add_trace.json.gz",
     ["--et", os.path.join(SHARED, "pytorch-et/benchmark_simple_add_et.json.gz")],
     {"et": os.path.join(SHARED, "pytorch-et/benchmark_simple_add_et.json.gz")}),
    ("pytorch-et", "pytorch-et/benchmark_simple_add_et.json.gz", [], {}),
]


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


class ImportLikeTheCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def same_as_cli(self, fmt, path, cli_opts, py_opts):
        out = os.path.join(self.tmp.name, "cli.json")
        p = cli("import", fmt, *cli_opts, path, "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g = commsched.import_trace(fmt, path, **py_opts)
        mine = os.path.join(self.tmp.name, "py.json")
        g.save(mine)
        with open(out, "rb") as a, open(mine, "rb") as b:
            self.assertEqual(a.read(), b.read(), "%s %s" % (fmt, path))
        # the CLI prints exactly the importer's messages
        said = ["commsched import: %s: %s: %s" % m for m in g.import_notes]
        self.assertEqual(said, [l for l in p.stderr.splitlines()
                                if l.startswith("commsched import: ")])
        self.assertEqual([str(x.message) for x in w
                          if issubclass(x.category, commsched.TraceWarning)],
                         ["%s: %s" % (m.file, m.text) for m in g.import_notes
                          if m.level == "warning"])
        return g

    def test_every_shared_trace(self):
        found = 0
        for fmt, rel, cli_opts, py_opts in TRACES:
            path = os.path.join(SHARED, rel)
            if not os.path.exists(path):
                continue
            found += 1
            with self.subTest(path=path):
                g = self.same_as_cli(fmt, path, cli_opts, py_opts)
                self.assertGreater(len(g), 0)
                # what users do next
                r = commsched.optimize(g)
                self.assertLessEqual(r.after.makespan_ns,
                                     r.before.makespan_ns * (1 + 1e-9))
        if not found:
            self.skipTest("no shared traces under %s" % SHARED)

    def test_kept_astra_and_hlo(self):
        for name in sorted(os.listdir(KEPT)):
            with self.subTest(name=name):
                self.same_as_cli("astra", os.path.join(KEPT, name), [], {})
        hlo = os.path.join(os.path.dirname(os.path.dirname(CASES)),
                           "graphs", "xla", "fsdp-mlp.cpu.hlo.txt")
        self.same_as_cli("hlo", hlo, [], {})

    def test_load_tells_the_formats_apart(self):
        et = os.path.join(SHARED, "chakra-et/all_reduce_4npus.0.et")
        if os.path.exists(et):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", commsched.TraceWarning)
                g = commsched.load(et, ranks=4)
            self.assertEqual(g.name, "chakra-all_reduce_4npus.0.et")
            self.assertIn('group "world" of 4 ranks', g.import_notes[-1].text)
        root = os.path.dirname(os.path.dirname(CASES))
        j = commsched.load(os.path.join(root, "graphs/examples/fsdp_2layer.json"))
        self.assertEqual(len(j), 26)
        self.assertEqual(j.import_notes, ())
        self.assertEqual(commsched.Graph("built").import_notes, ())

    def test_errors_are_the_clis(self):
        n = 0
        for case in sorted(os.listdir(CASES)):
            d = os.path.join(CASES, case)
            args = os.path.join(d, "args")
            if not os.path.isfile(args):
                continue
            with open(args) as f:
                words = f.read().split()
            if len(words) != 1:
                continue  # options: the CLI's parsing, covered by run_case
            fmt = words[0]
            inp = os.path.join(d, "input")
            p = cli("import", fmt, inp, "-o", os.path.join(self.tmp.name, "x"))
            with self.subTest(case=case):
                with self.assertRaises(commsched.Error) as e:
                    commsched.import_trace(fmt, inp)
                self.assertEqual("commsched: %s" % e.exception,
                                 p.stderr.splitlines()[-1])
                self.assertEqual(e.exception.status in ("ENOMEM",),
                                 p.returncode == 1)
                n += 1
        self.assertGreater(n, 50)

    def test_json_errors_are_located_in_the_file(self):
        path = os.path.join(self.tmp.name, "bad.json")
        with open(path, "w") as f:
            f.write('{"version": 1,\n  "nodes": [}\n')
        with self.assertRaises(commsched.Error) as e:
            commsched.load(path)
        self.assertTrue(str(e.exception).startswith(path + ":2:"),
                        str(e.exception))
        self.assertEqual(e.exception.line, 2)

    def test_bad_calls(self):
        with self.assertRaises(commsched.Error) as e:
            commsched.import_trace("chakra-et", "x")
        self.assertIn("unknown format", str(e.exception))
        with self.assertRaises(TypeError):
            commsched.import_trace("astra", "x", npu=8)
        with self.assertRaises(commsched.Error) as e:
            commsched.import_trace("kineto", "/nonexistent/t.json")
        self.assertEqual(e.exception.status, "EIO")
        self.assertEqual(str(e.exception),
                         "/nonexistent/t.json: cannot open: No such file or "
                         "directory")


if __name__ == "__main__":
    unittest.main()
