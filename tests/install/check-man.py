#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Render hpm(1) and hpmalloc(7) and hold them against the sources.

    check-man.py SRCDIR HPM_PAGE HPMALLOC_PAGE     (pages: roff, or roff.gz)

Each page must render with `man --warnings -l` and print no warning, and
say what the sources define, so that a new command, option, tunable or
counter cannot go undocumented:
  hpm(1): every command of tools/hpm/hpm.c's table (but the internal
    __ ones), every option the commands compare argv with, every TLB
    preset, every environment variable hpm reads;
  hpmalloc(7): every tunable of tunables/tunables.c's table with its
    environment alias, range and default, every mallopt parameter of
    malloc/init.c, every field of struct hpmalloc_stats, every element
    and attribute malloc/stats.c prints in malloc_info, every function
    malloc/hpmalloc.map exports.
Prints one line per check ("ok"/"FAIL") and exits 1 if any failed.
MIT licence.
"""
import glob
import os
import re
import subprocess
import sys

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def render(page, width):
    env = dict(os.environ, MANWIDTH=str(width), LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "--warnings", "-l", page], env=env, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def page_checks(page):
    rc, out, err = render(page, 80)
    name = os.path.basename(page)
    check(rc == 0 and "NAME" in out, f"{name}: man -l renders it (exit {rc}, {len(out.splitlines())} lines)")
    check(err.strip() == "", f"{name}: man --warnings prints no warning" + (f": {err.strip()[:300]}" if err.strip() else ""))
    # Wide enough that no name is broken across lines.
    return render(page, 400)[1]


def missing(text, words):
    return [w for w in words if not re.search(r"(?<![\w.-])" + re.escape(w) + r"(?![\w-])", text)]


def hpm_checks(src, text):
    hpm_c = read(f"{src}/tools/hpm/hpm.c")
    cmds = [c for c in re.findall(r'\{\s*"(\w+)",\s*cmd_\w+\s*[,}]', hpm_c) if not c.startswith("__")]
    check(len(cmds) >= 8 and not missing(text, cmds), f"hpm(1) names every command ({' '.join(cmds)})"
          + (f"; missing: {missing(text, cmds)}" if missing(text, cmds) else ""))
    sources = [read(p) for p in sorted(glob.glob(f"{src}/tools/hpm/*.c")) if not p.endswith("recorder.c")]
    opts = set()
    for s in sources:
        opts.update(re.findall(r'strcmp\((?:argv\[\*?i\]|arg|a),\s*"(-{1,2}[a-z][a-z-]*)"\)', s))
        # the option tables of args.c: .name = "--json", .alias = "-q"
        opts.update(re.findall(r'\.(?:name|alias)\s*=\s*"(-{1,2}[a-z][a-z-]*)"', s))
    opts = sorted(opts)
    check(len(opts) >= 20 and not missing(text, opts), f"hpm(1) names every option ({len(opts)})"
          + (f"; missing: {missing(text, opts)}" if missing(text, opts) else ""))
    presets = re.findall(r'^\s*\{\s*"([a-z0-9-]+)",\s*\{', read(f"{src}/tools/hpm/tlb.c"), re.M)
    check(len(presets) >= 4 and not missing(text, presets), f"hpm(1) names every TLB preset ({' '.join(presets)})"
          + (f"; missing: {missing(text, presets)}" if missing(text, presets) else ""))
    envs = set()
    for s in sources:
        envs.update(re.findall(r'getenv\("([A-Z_]+)"\)', s))
    envs = sorted(envs - {"HOME"})
    check(len(envs) >= 5 and not missing(text, envs), f"hpm(1) names every environment variable ({' '.join(envs)})"
          + (f"; missing: {missing(text, envs)}" if missing(text, envs) else ""))


def c_value(expr):
    """The value of a tunables.c table entry: decimal, hex or a product of
    the file's constants; SIZE_MAX as the man page writes it."""
    consts = {"HP_KIB": 1024, "HP_MIB": 1024 * 1024, "HP_I32_MAX": 2**31 - 1}
    expr = expr.strip()
    if expr == "HP_SZ_MAX":
        return "SIZE_MAX"
    v = 1
    for factor in expr.split("*"):
        factor = factor.strip()
        v *= consts[factor] if factor in consts else int(factor, 0)
    return str(v)


def hpmalloc_checks(src, text):
    table = re.findall(r'\[HP_T_\w+\]\s*=\s*\{\s*"([\w.]+)",\s*(NULL|"(\w+)"),\s*HP_TT_(\w+),\s*([^,]+),\s*([^,]+),\s*([^}]+?)\s*\}',
                       read(f"{src}/tunables/tunables.c"))
    check(len(table) >= 16, f"tunables.c: {len(table)} tunables read from the table")
    # Each tunable's paragraph: from its heading line to the next tunable's.
    lines = text.splitlines()
    heads = {}
    for i, line in enumerate(lines):
        m = re.match(r"^ {7}((?:glibc\.malloc|hpmalloc)\.\w+)( \((\w+)\))?\s*$", line)
        if m:
            heads[m.group(1)] = (i, m.group(3))
    order = sorted(heads.values())
    for name, _, alias, kind, lo, hi, default in table:
        if name not in heads:
            check(False, f"hpmalloc(7) has a paragraph for {name}")
            continue
        start, man_alias = heads[name]
        end = min([i for i, _ in order if i > start] + [start + 12])
        para = " ".join(lines[start + 1:end])
        want_range = f"{c_value(lo)} to {c_value(hi)}"
        want_def = f"default {c_value(default)}"
        if kind == "PATH":  # a file name: min and max bound its length, no default name
            want_range, want_def = f"{want_range} bytes", "default none"
        ok = man_alias == (alias or None) and want_range in para and re.search(re.escape(want_def) + r"\b", para)
        check(bool(ok), f"hpmalloc(7) {name}: alias {alias or 'none'}, {want_range}, {want_def}"
              + ("" if ok else f" (page: alias {man_alias}; {para[:200]!r})"))
    mallopt = re.findall(r"case ((?:HPMALLOC_)?M_[A-Z_]+):", read(f"{src}/malloc/init.c"))
    check(len(mallopt) >= 9 and not missing(text, mallopt), f"hpmalloc(7) names every mallopt parameter ({len(mallopt)})"
          + (f"; missing: {missing(text, mallopt)}" if missing(text, mallopt) else ""))
    header = read(f"{src}/include/hpmalloc.h")
    struct = re.search(r"struct hpmalloc_stats \{(.*?)\};", header, re.S).group(1)
    fields = re.findall(r"^\s*(?:size_t|int)\s+(\w+);", struct, re.M)
    check(len(fields) >= 10 and not missing(text, fields), f"hpmalloc(7) names every hpmalloc_stats field ({len(fields)})"
          + (f"; missing: {missing(text, fields)}" if missing(text, fields) else ""))
    stats = read(f"{src}/malloc/stats.c")
    info = stats[stats.index("static void info_heap"):]
    elements = sorted(set(re.findall(r"<(\w+)[ >/\\]", info)))
    attrs = sorted(set(re.findall(r"(\w+)=\\\"", info)))
    section = text[text.index("malloc_info(3) prints"):]
    check(len(elements) >= 10 and not missing(section, elements),
          f"hpmalloc(7) names every malloc_info element ({' '.join(elements)})"
          + (f"; missing: {missing(section, elements)}" if missing(section, elements) else ""))
    check(len(attrs) >= 15 and not missing(section, attrs), f"hpmalloc(7) names every malloc_info attribute ({len(attrs)})"
          + (f"; missing: {missing(section, attrs)}" if missing(section, attrs) else ""))
    mapfile = read(f"{src}/malloc/hpmalloc.map")
    glob_part = mapfile[mapfile.index("global:"):mapfile.index("local:")]
    funcs = [f for f in re.findall(r"\b([a-z]\w*);", glob_part)] + ["hpmalloc_version", "hpmalloc_stats",
                                                                     "hpmalloc_check_heap"]
    check(len(funcs) >= 20 and not missing(text, funcs), f"hpmalloc(7) names every exported function ({len(funcs)})"
          + (f"; missing: {missing(text, funcs)}" if missing(text, funcs) else ""))
    for word in ("HPMALLOC_VERBOSE", "GLIBC_TUNABLES", "hpmalloc_default_tunables", "SIGBUS"):
        check(word in text, f"hpmalloc(7) mentions {word}")


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    src, hpm_page, hpmalloc_page = sys.argv[1:]
    hpm_checks(src, page_checks(hpm_page))
    hpmalloc_checks(src, page_checks(hpmalloc_page))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
