#!/usr/bin/env python3
"""No name is declared in the anonymous namespaces of two files of one unity batch.

setup.sh builds in unity batches (CMAKE_UNITY_BUILD): the files of a batch are one translation
unit. Two files that define the same name alike fail to compile, but two that define it with
different parameters compile as one overload set, and a call in one file may then quietly pick
the other file's function. This finds such names (a heuristic: function and constant
definitions, and using-declarations, that start at column 0 inside a top-level `namespace {`).
A using-declaration and a definition of one name do not compile together (`using
testing::kNow;` beside another file's `constexpr double kNow`); two using-declarations of the
same thing do.

  tests/unity_names_test.py BUILD_DIR
"""
import glob
import os
import re
import sys

DEFINITION = re.compile(
    r"^(?:static\s+|inline\s+|constexpr\s+|template\s*<[^>]*>\s*)*"
    r"[A-Za-z_][\w:<>,\s\*&]*?[\s\*&]([A-Za-z_]\w*)\s*\([^;{]*\)\s*(?:const\s*)?(?:->[^{;]*)?\{",
    re.M,
)
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "TEST", "TEST_F", "TEST_P"}
CONSTANT = re.compile(
    r"^(?:static\s+|inline\s+)*(?:constexpr|const)\s+[\w:<>,\s\*&]*?[\s\*&]([A-Za-z_]\w*)\s*(?:=|\{|\[)",
    re.M,
)
USING = re.compile(r"^using\s+((?:[\w]+::)+([A-Za-z_]\w*))\s*;", re.M)


def strip_comments_and_strings(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'R"(\w*)\(.*?\)\1"', '""', text, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def anonymous_blocks(text):
    """The text of each `namespace {` block."""
    for start in re.finditer(r"namespace\s*\{", text):
        depth, i = 1, start.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield text[start.end() : i]


def names_in(path):
    """Each name the file declares in an anonymous namespace, and what: "define", or the
    qualified name a using-declaration brings in."""
    text = strip_comments_and_strings(open(path, encoding="utf-8", errors="replace").read())
    names = {}
    for block in anonymous_blocks(text):
        for m in DEFINITION.finditer(block):
            if m.group(1) not in NOT_FUNCTIONS:
                names[m.group(1)] = "define"
        for m in CONSTANT.finditer(block):
            names[m.group(1)] = "define"
        for m in USING.finditer(block):
            names.setdefault(m.group(2), m.group(1))
    return names


def clash(a, b):
    """Two declarations of one name in one unit that do not compile or may call the wrong one."""
    return a == "define" or b == "define" or a != b


def main():
    build = sys.argv[1]
    batches = glob.glob(os.path.join(build, "**", "Unity", "unity_*.cxx"), recursive=True)
    if not batches:
        print("no unity batches in", build, "(a build compiled file by file): nothing to check")
        return 0
    bad = 0
    for batch in sorted(batches):
        files = re.findall(r'#include "([^"]+)"', open(batch).read())
        where = {}
        for f in files:
            if not os.path.exists(f):
                continue
            for name, what in names_in(f).items():
                if name in where and clash(where[name][1], what):
                    print(f"{where[name][0]} and {f} both declare '{name}' in an anonymous "
                          f"namespace, and compile as one unit ({os.path.basename(batch)})")
                    bad += 1
                elif name not in where:
                    where[name] = (f, what)
    print(f"{len(batches)} unity batches read, {bad} name(s) declared twice")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
