"""The project's size rules (standards: files <= 400 lines, functions and coroutines <= 60) for the
folders that once grew a hub: agent/claims and agent/drivers. A rough brace count: a function is a
brace block whose head is neither a namespace, a type nor an initializer, at namespace or class
scope; lambdas and blocks inside it count toward it. KNOWN lists offenders being split elsewhere:
each must still offend (a fixed one leaves the list) and none may grow."""
import os
import re
import unittest

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
FOLDERS = ("agent/claims", "agent/drivers")
MAX_FUNCTION, MAX_FILE = 60, 400
# "path:function head start" -> the length it may not exceed until it is split. Empty: every
# function in both folders is within the limit.
KNOWN = {}


def code_lines(text):
    """The text line by line with comments, string and character literals blanked."""
    out, in_block = [], False
    for line in text.splitlines():
        if in_block:
            end = line.find("*/")
            if end < 0:
                out.append("")
                continue
            line, in_block = " " * (end + 2) + line[end + 2:], False
        line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
        line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
        line = line.split("//", 1)[0]
        while "/*" in line:
            start = line.index("/*")
            end = line.find("*/", start + 2)
            if end < 0:
                line, in_block = line[:start], True
                break
            line = line[:start] + line[end + 2:]
        out.append(line)
    return out


def block_kind(head):
    head = head.strip()
    if re.search(r"\bnamespace\b[^()]*$", head) or re.search(r'\bextern\s+""$', head):
        return "scope"
    if re.search(r"\b(class|struct|union|enum)\b[^()]*$", head):
        return "scope"
    if head.endswith("=") or head.endswith(",") or head.endswith("(") or not head.endswith((")", "override", "const",
                                                                                             "noexcept", "final")) \
            and not re.search(r"\)\s*(->\s*[^{]+|try|mutable)?$", head):
        return "init"
    return "function"


def functions(lines):
    """(head, first line, length) of every function body."""
    stack, head, found = [], "", []
    for number, line in enumerate(lines, 1):
        for ch in line:
            if ch == "{":
                inside = any(kind == "function" for kind, _, _ in stack)
                kind = "inner" if inside else block_kind(head)
                stack.append((kind, number, " ".join(head.split())))
                head = ""
            elif ch == "}":
                if stack:
                    kind, start, text = stack.pop()
                    if kind == "function":
                        found.append((text, start, number - start + 1))
                head = ""
            elif ch == ";":
                head = ""
            else:
                head += ch
        head += " "
    return found


def offenders(root):
    long_files, long_functions = [], {}
    for folder in FOLDERS:
        for directory, _, names in os.walk(os.path.join(root, folder)):
            for name in sorted(names):
                if not name.endswith((".cpp", ".hpp")):
                    continue
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                if text.count("\n") > MAX_FILE:
                    long_files.append(f"{rel}: {text.count(chr(10))} lines")
                for head, start, length in functions(code_lines(text)):
                    if length > MAX_FUNCTION:
                        name_part = head.split("(", 1)[0]
                        long_functions[f"{rel}:{name_part}"] = (start, length)
    return long_files, long_functions


class CheckerTest(unittest.TestCase):
    """The checker itself finds what it must, so the real check cannot pass by finding nothing."""

    def test_counts_free_member_and_coroutine_bodies(self):
        body = "\n".join(["  x();"] * 61)
        text = (f"namespace n {{\nint f(int a) {{\n{body}\n}}\nclass C {{\n  void g() const override {{\n{body}\n  }}\n}};\n"
                f"auto h() -> int {{\n{body}\n}}\nconst int table[] = {{\n{body}\n}};\n}}\n")
        found = {head.split("(")[0]: length for head, _, length in functions(code_lines(text))}
        self.assertEqual(found, {"int f": 63, "void g": 63, "auto h": 63})

    def test_ignores_braces_in_strings_and_comments(self):
        text = 'void f() {\n  s = "{{{";  // {\n  /* { */ c = \'{\';\n}\n'
        self.assertEqual([(h.split("(")[0], n) for h, _, n in functions(code_lines(text))], [("void f", 4)])

    def test_finds_the_folders(self):
        for folder in FOLDERS:
            self.assertTrue(os.path.isdir(os.path.join(SRC, folder)), f"{folder} missing under {SRC}")
        _, found = offenders(SRC)
        total = sum(1 for folder in FOLDERS for _, _, names in os.walk(os.path.join(SRC, folder))
                    for name in names if name.endswith(".cpp"))
        self.assertGreater(total, 50, "too few sources: the walk is not looking where the code is")


class SizeTest(unittest.TestCase):
    def test_no_file_over_400_lines(self):
        long_files, _ = offenders(SRC)
        self.assertEqual(long_files, [], f"files over {MAX_FILE} lines: split them by what they hold")

    def test_no_function_over_60_lines(self):
        _, found = offenders(SRC)
        new = {k: v for k, v in found.items() if k not in KNOWN}
        self.assertEqual(new, {}, f"functions over {MAX_FUNCTION} lines (path:head -> first line, length)")
        for key, limit in KNOWN.items():
            self.assertIn(key, found, f"{key} is no longer over {MAX_FUNCTION} lines: remove it from KNOWN")
            self.assertLessEqual(found[key][1], limit, f"{key} grew")


if __name__ == "__main__":
    unittest.main()
