//! Benchmarks for transcope live in `benches/` (criterion, `harness = false`) and
//! `bench.sh` (whole-CLI). This library is empty; it only anchors the package.
