"""Malformed input never crashes monarch-opt.

Every prefix of every example program (cut at each line and in the middle
of lines) and a fixed set of byte-level mutations must give either success
(a valid prefix) or exit code 1 with a `file:line:col: error:` diagnostic:
never a signal, an abort or a hang.
"""
import random
import re
import subprocess

DIAG = re.compile(r"^[^\s:]+:\d+:\d+: error: ", re.M)


def run_opt(tool, path):
    proc = subprocess.run([str(tool), str(path)], capture_output=True, text=True,
                          timeout=30)
    return proc.returncode, proc.stderr


def check_no_crash(tool, path, what):
    rc, err = run_opt(tool, path)
    assert rc in (0, 1), f"{what}: monarch-opt exited with {rc}\n{err}"
    if rc == 1:
        assert DIAG.search(err), f"{what}: no file:line:col diagnostic\n{err}"


def cut_points(text):
    points = set()
    offset = 0
    for line in text.splitlines(keepends=True):
        points.add(offset + len(line) // 2)   # mid-line
        offset += len(line)
        points.add(offset)                    # after the line
    return sorted(p for p in points if p < len(text))


def test_truncated_examples_fail_cleanly(monarch_opt, examples, tmp_path):
    checked = 0
    for example in examples:
        text = example.read_text()
        for cut in cut_points(text):
            bad = tmp_path / f"{example.stem}-cut{cut}.mlir"
            bad.write_text(text[:cut])
            check_no_crash(monarch_opt, bad, f"{example.name} cut at byte {cut}")
            checked += 1
    assert checked > 0


def test_mutated_examples_fail_cleanly(monarch_opt, examples, tmp_path):
    rng = random.Random(20261130)
    tokens = ["@", "%", "<", ">", "(", ")", "{", "}", ":", ",", "x", "0", "-1",
              "tensor<", "@nope", "monarch.nope", "\"", "#monarch.dist<",
              "!monarch.event", "99999999999999999999"]
    for example in examples:
        text = example.read_text()
        for i in range(40):
            pos = rng.randrange(len(text))
            if rng.random() < 0.5:
                mutated = text[:pos] + rng.choice(tokens) + text[pos:]
            else:
                mutated = text[:pos] + text[pos + rng.randrange(1, 8):]
            bad = tmp_path / f"{example.stem}-mut{i}.mlir"
            bad.write_text(mutated)
            check_no_crash(monarch_opt, bad, f"{example.name} mutation {i}")


def test_undefined_mesh_reports_location(monarch_opt, tmp_path):
    src = tmp_path / "undefined_mesh.mlir"
    src.write_text(
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %x = monarch.feed %a to @nowhere : tensor<4xf32>\n"
        "  return %x : tensor<4xf32>\n"
        "}\n")
    rc, err = run_opt(monarch_opt, src)
    assert rc == 1
    assert f"{src}:2:8: error: 'monarch.feed' op @nowhere does not name a " \
        "monarch.proc_mesh or monarch.mesh_slice" in err, err
