#!/usr/bin/env python3
"""The functions a binary ran, as an LLD symbol-ordering file (benches/hot-code.sh).

Usage: hot_code.py MAP BINARY OUT CALLGRIND_OUT...

MAP is the binary's link map (`-Wl,-Map`), BINARY its path as callgrind saw it, and
each CALLGRIND_OUT a run with `--dump-instr=yes`. Every executed instruction address of
BINARY is mapped to the input section (one function each: Rust and the bundled C are
built with a section per function) that holds it, and the symbols of those sections are
written to OUT, one a line, in the order the link placed them.
"""
import bisect
import re
import sys

SECTION = re.compile(
    r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S.*:\((\.text[^)]*)\)\s*$")
PREFIXES = (".text.unlikely.", ".text.startup.", ".text.hot.", ".text.exit.", ".text.")


def sections(map_path):
    """(start, size, section name) of every code input section, by address."""
    out = []
    with open(map_path, errors="replace") as fh:
        for line in fh:
            m = SECTION.match(line)
            if m and int(m.group(2), 16):
                out.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    out.sort()
    return out


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
        prefix = next((p for p in PREFIXES if name.startswith(p)), None)
        if prefix is None:
            # A whole object's `.text` (start-up files): no symbol to order it by.
            continue
        names.append(name[len(prefix):])
        size += secs[i][1]
    with open(out_path, "w") as fh:
        fh.write("\n".join(names) + "\n")
    print(f"{out_path}: {len(names)} functions, {size / 1e6:.2f} MB of code "
          f"({seen} instruction addresses in {len(runs)} runs)", file=sys.stderr)


if __name__ == "__main__":
    main()
