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
the whole section.
"""
import bisect
import re
import sys

SECTION = re.compile(
    r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S.*:\((\.text[^)]*)\)\s*$")
# A symbol the map lists in the input section above it (LLD prints it demangled).
SYMBOL = re.compile(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\d+\s+([^\s.]\S*)\s*$")
PREFIXES = (".text.unlikely.", ".text.startup.", ".text.hot.", ".text.exit.", ".text.")


def sections(map_path):
    """(start, size, name to order it by) of every code input section, by address: the
    function its section is named after, else the first symbol listed in it (None when
    there is none)."""
    found = []
    with open(map_path, errors="replace") as fh:
        for line in fh:
            m = SECTION.match(line)
            if m:
                found.append([int(m.group(1), 16), int(m.group(2), 16), m.group(3), []])
                continue
            m = SYMBOL.match(line)
            if m and found:
                found[-1][3].append(m.group(1))
    out = []
    for start, size, section, symbols in found:
        if size:
            out.append((start, size, order_name(section, symbols)))
    out.sort()
    return out


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
