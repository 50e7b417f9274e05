#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The SPDX license line of every source file of gpass (Apache-2.0, see LICENSE).

    scripts/spdx.py            add the line where it is missing (after a shebang)
    scripts/spdx.py --check    exit 1 and list the files without it (CTest `license.spdx`)

Source files: C++ (.hpp .cpp .h, and .hpp.in templates), Python, shell (.sh, .ci/run), CMake
(CMakeLists.txt, .cmake, .cmake.in) and pkg-config templates, outside tests/data and fuzz
corpora (data, not sources).
"""
import os
import subprocess
import sys

LINE = "SPDX-License-Identifier: Apache-2.0"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def comment_for(path):
    name = os.path.basename(path)
    if name.endswith((".hpp", ".cpp", ".h", ".hpp.in")):
        return "// "
    if name.endswith((".py", ".sh", ".cmake", ".cmake.in", ".pc.in")) or name == "CMakeLists.txt" or path == ".ci/run":
        return "# "
    return None


def listed_files():
    try:
        return subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        found = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith((".git", "build")) and x != "__pycache__"]
            found += [os.path.relpath(os.path.join(d, f), ROOT).replace(os.sep, "/") for f in files]
        return found


def sources():
    for p in listed_files():
        if not p or p.startswith(("tests/data/", "fuzz/corpus/", "fuzz/regressions/")):
            continue
        if comment_for(p) and os.path.isfile(os.path.join(ROOT, p)):
            yield p


def has_line(text):
    return LINE in "\n".join(text.split("\n")[:3])


def main():
    check = "--check" in sys.argv[1:]
    missing = []
    for p in sources():
        full = os.path.join(ROOT, p)
        with open(full, encoding="utf-8") as f:
            text = f.read()
        if has_line(text):
            continue
        missing.append(p)
        if check:
            continue
        line = comment_for(p) + LINE + "\n"
        if text.startswith(("#!", "// EXPECT:")):  # a shebang; a compile-fail test's first line
            nl = text.index("\n") + 1
            text = text[:nl] + line + text[nl:]
        else:
            text = line + text
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    if check:
        for p in missing:
            print(f"no SPDX line: {p}")
        print(f"spdx: {len(missing)} source file(s) without '{LINE}'")
        return 1 if missing else 0
    print(f"spdx: added the line to {len(missing)} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
