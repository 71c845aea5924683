//! `benches/hot_code.py`, which writes `crates/cli/hot-code.txt` (the functions a
//! hook's Stops run, placed first by the binary's link: `crates/cli/build.rs`): every
//! instruction address callgrind saw in the binary goes to the function section that
//! holds it, and the list names those functions in link order (a static C library's
//! object, built without a section per function, by the first symbol in its section;
//! the EVEX and AVX-512 variants of a C library function valgrind ran in AVX2 with it).

mod common;

use std::path::Path;
use std::process::{Command, Output};

const MAP: &str = "\
             VMA              LMA     Size Align Out     In      Symbol
          401000           401000      200    16 .text
          401000           401000       10    16         /x/crt1.o:(.text)
          401000           401000        0     1                 _start
          401010           401010       20    16         /x/a.o:(.text._ZN1a3one17h0000000000000001E)
          401010           401010       20     1                 a::one
          401030           401030       30    16         /x/sqlite3.o:(.text.sqlite3Step)
          401030           401030       30     1                 sqlite3Step
          401060           401060       40    16         /x/b.o:(.text.unlikely._ZN1b3two17h0000000000000002E)
          401060           401060       40     1                 b::two
          4010a0           4010a0       10    16         /x/b.o:(.text._ZN1b5three17h0000000000000003E)
          4010a0           4010a0       10     1                 b::three
          4010b0           4010b0        0    16         /x/c.o:(.text.empty)
          4010c0           4010c0       40    64         /x/libc.a(memmove-evex.o):(.text.evex)
          4010c0           4010c0        8     1                 __mempcpy_evex
          4010d0           4010d0       30     1                 __memmove_evex
          401100           401100       40    16         /x/libc.a(nosym.o):(.text)
          401140           401140       20    16         /x/libc.a(memchr-avx2.o):(.text.avx)
          401140           401140       20     1                 __memchr_avx2
          401160           401160       20    16         /x/libc.a(memchr-evex.o):(.text.evex)
          401160           401160       20     1                 __memchr_evex
          401180           401180       20    16         /x/libc.a(memchr-sse2.o):(.text)
          401180           401180       20     1                 __memchr_sse2
          4011a0           4011a0      100    16 .rodata
";

/// Two runs: one in another object at the same addresses (not the binary's), one in
/// the binary with absolute, relative and repeated positions and a call.
macro_rules! in_other_object {
    () => {
        "\
# callgrind format
positions: instr line
events: Ir
ob=(1) /lib/other.so
fn=(1) x
0x401030 1 5
"
    };
}
const RUN_OTHER: &str = concat!(in_other_object!(), "+0x70 2 1\n");
const RUN_BINARY: &str = concat!(
    in_other_object!(),
    "\
ob=(2) /bin/transcope
fn=(2) 0x401000
0x401000 1 2
fn=(3) 0x401010
0x401011 3 4
+2 * 1
cfn=(4) 0x4010a0
calls=1 0x4010a0 9
* * 5
fn=(5) 0x401060
0x40109f 1 1
fn=(6) 0x4010d0
0x4010d4 1 1
fn=(7) 0x401100
0x401108 1 1
fn=(8) 0x401140
0x401144 1 1
ob=(1)
fn=(1)
0x401031 1 1
"
);

#[test]
fn the_list_names_each_executed_function_of_the_binary_once_in_link_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let map = file("transcope.map", MAP);
    let runs = [file("a.out", RUN_OTHER), file("b.out", RUN_BINARY)];
    let out = dir.path().join("hot-code.txt");
    // The script over the map and `runs` of the binary /bin/transcope, its list to `to`.
    let hot_code = |to: &Path, runs: &[std::path::PathBuf]| -> Output {
        Command::new("python3")
            .arg(common::workspace().join("benches/hot_code.py"))
            .arg(&map)
            .arg("/bin/transcope")
            .arg(to)
            .args(runs)
            .output()
            .expect("python3 runs")
    };
    common::succeeded(&hot_code(&out, &runs), &"hot_code.py");
    // A section per function is named after it; a whole object's `.text` (the
    // start-up file's, the C library's `.text.evex`) by the first symbol in it, and one
    // with no symbol not at all; sqlite3Step and b::three ran only in another object, or
    // were only called (their own code never ran). memchr ran in its AVX2 variant (as
    // under valgrind): its EVEX variant is listed with it, its SSE2 one is not.
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "_start\n_ZN1a3one17h0000000000000001E\n_ZN1b3two17h0000000000000002E\n__mempcpy_evex\n\
         __memchr_avx2\n__memchr_evex\n"
    );
    // Runs that never touch the binary write nothing and say so.
    let none = hot_code(&dir.path().join("none.txt"), &runs[..1]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("nothing written"));
    assert!(!dir.path().join("none.txt").exists());
}

/// The lists the builds use name functions, one a line, and are not empty: a broken
/// regeneration would silently cost every hook its start-up gain. The static build's
/// names the C library's code too (its own binary's, there).
#[test]
fn the_checked_in_lists_are_lists_of_symbols() {
    let read = |name: &str| {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
    };
    for name in ["hot-code.txt", "hot-code-static.txt"] {
        let list = read(name);
        let names: Vec<&str> = list.lines().collect();
        assert!(names.len() > 500, "{name}: {} names", names.len());
        assert!(
            names
                .iter()
                .all(|n| !n.is_empty() && !n.contains(char::is_whitespace)),
            "{name}"
        );
        assert!(
            names.iter().any(|n| n.contains("run_stop")),
            "{name}: the Stop itself is listed"
        );
        assert!(
            names.iter().any(|n| n.starts_with("sqlite3")),
            "{name}: and the SQLite it runs"
        );
    }
    let static_list = read("hot-code-static.txt");
    assert!(
        static_list.lines().any(|n| n.contains("memmove")),
        "the static build's list orders the C library's memmove"
    );
}
