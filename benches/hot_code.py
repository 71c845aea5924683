#!/usr/bin/env python3
"""The functions a binary ran, as an LLD symbol-ordering file (benches/hot-code.sh).

Usage: hot_code.py MAP BINARY OUT CALLGRIND_OUT...

MAP is the binary's link map (`-Wl,-Map`), BINARY its path as callgrind saw it, and
each CALLGRIND_OUT a run with `--dump-instr=yes`. Every executed instruction address of
BINARY is mapped to the input section (one function each: Rust and the bundled C are
built with a section per function) that holds it, and the symbols of those sections are
written to OUT, one a line, in the order the link placed them. A section that holds a
whole object's code (a static C library's `.text`, `.text.evex`: built without a
section per function) is named by the first symbol the map lists in it, which moves
the whole section. Valgrind has no AVX-512, so of a C library function built in
several variants (`memchr-avx2.o`, `memchr-evex.o`…) the runs see the AVX2 one: its
EVEX and AVX-512 variants, which the hardware may pick, are listed with it.
"""
import bisect
import re
import sys

SECTION = re.compile(
    r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+(\S.*):\((\.text[^)]*)\)\s*$")
# A C library object built for one instruction set: `memchr-avx2.o`, `strlen-evex.o`,
# `memmove-avx512-unaligned-erms.o` (the function's stem, then the set).
VARIANT = re.compile(
    r"\(([a-z0-9_]+)-(sse2|ssse3|sse4_1|sse4_2|avx|avx2|evex|evex512|avx512|avx512f|avx512bw|avx512vl)"
    r"(?:-[a-z0-9_-]*)?\.o\)$")
UNSEEN = ("evex", "evex512", "avx512", "avx512f", "avx512bw", "avx512vl")
# A symbol the map lists in the input section above it (LLD prints it demangled).
SYMBOL = re.compile(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\d+\s+([^\s.]\S*)\s*$")
PREFIXES = (".text.unlikely.", ".text.startup.", ".text.hot.", ".text.exit.", ".text.")


def sections(map_path):
    """(start, size, name to order it by, object) of every code input section, by
    address: the function its section is named after, else the first symbol listed in
    it (None when there is none)."""
    found = []
    with open(map_path, errors="replace") as fh:
        for line in fh:
            m = SECTION.match(line)
            if m:
                found.append([int(m.group(1), 16), int(m.group(2), 16), m.group(4), [],
                              m.group(3).strip()])
                continue
            m = SYMBOL.match(line)
            if m and found:
                found[-1][3].append(m.group(1))
    out = []
    for start, size, section, symbols, obj in found:
        if size:
            out.append((start, size, order_name(section, symbols), obj))
    out.sort()
    return out


def unseen_variants(secs, hot):
    """The sections of the EVEX and AVX-512 variants of the C library functions whose
    other variants ran (`hot`: indexes into `secs`)."""
    stems = set()
    for i in hot:
        m = VARIANT.search(secs[i][3])
        if m:
            stems.add(m.group(1))
    return {i for i, s in enumerate(secs)
            if (m := VARIANT.search(s[3])) and m.group(1) in stems and m.group(2) in UNSEEN}


def order_name(section, symbols):
    """The symbol to order `section` by. A section per function is named after it
    (`.text.` and the mangled name, which the map lists demangled); a section for a
    whole object's code, by the first symbol listed in it."""
    prefix = next((p for p in PREFIXES if section.startswith(p)), None)
    if prefix is not None:
        name = section[len(prefix):]
        if name.startswith(("_ZN", "_R")) or name in symbols:
            return name
    return symbols[0] if symbols else None


def executed(path, binary):
    """The instruction addresses of `binary` in one callgrind output.

    Positions are `instr line`; an address is absolute (`0x..`), relative to the last
    one (`+n`, `-n`), or the same (`*`). Object names are given once, by number
    (`ob=(n) name`, also in `cob=`), then by number alone.
    """
    addrs, names, ob, last = set(), {}, None, 0
    with open(path, errors="replace") as fh:
        for line in fh:
            if line.startswith(("ob=", "cob=")):
                m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line.strip())
                if m.group(2):
                    names[m.group(1)] = m.group(2)
                if line.startswith("ob="):
                    ob = names.get(m.group(1))
                continue
            if not line or line[0] not in "0123456789+-*":
                continue
            tok = line.split()[0]
            if tok.startswith("0x"):
                last = int(tok, 16)
            elif tok[0] == "+":
                last += int(tok[1:], 0)
            elif tok[0] == "-":
                last -= int(tok[1:], 0)
            if ob == binary:
                addrs.add(last)
    return addrs


def main():
    map_path, binary, out_path, *runs = sys.argv[1:]
    secs = sections(map_path)
    starts = [s[0] for s in secs]
    hot, seen = set(), 0
    for run in runs:
        addrs = executed(run, binary)
        seen += len(addrs)
        for a in addrs:
            i = bisect.bisect_right(starts, a) - 1
            if i >= 0 and a < secs[i][0] + secs[i][1]:
                hot.add(i)
    if not hot:
        sys.exit(f"no instruction of {binary} found in the runs: nothing written")
    hot |= unseen_variants(secs, hot)
    names, size = [], 0
    for i in sorted(hot):
        name = secs[i][2]
        if name is None:
            # Code with no symbol in the map: nothing to order it by.
            continue
        names.append(name)
        size += secs[i][1]
    with open(out_path, "w") as fh:
        fh.write("\n".join(names) + "\n")
    print(f"{out_path}: {len(names)} functions, {size / 1e6:.2f} MB of code "
          f"({seen} instruction addresses in {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
