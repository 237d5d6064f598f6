//! The tree-walking interpreter's own speed on three small programs: integer
//! arithmetic in a `while` loop, method calls on an object, and building a
//! string from many pieces. They guard against the language growing slower
//! as it grows larger (issue 13: record before and after). The programs
//! live in `benches/programs/`, beside the Python equivalents that
//! `benches/compare.py` times them against (issue 14).

use criterion::{criterion_group, criterion_main, Criterion};
use magus_sandbox::testing::buzz::{self, Interpreter};
use std::path::Path;

/// 1,000,000 integer additions in a `while` loop.
const ADDITIONS: &str = include_str!("programs/while_additions.buzz");

/// 100,000 method calls on one object.
const METHOD_CALLS: &str = include_str!("programs/method_calls.buzz");

/// 100,000 string pieces appended to a list, then joined.
const STRING_JOIN: &str = include_str!("programs/string_join.buzz");

fn run(source: &str) {
    let file = Path::new("bench.buzz");
    let program = buzz::parse(file, source).expect("bench program parses");
    let status = Interpreter::new(file, Vec::new())
        .with_output(Box::new(std::io::sink()))
        .run(&program, Vec::new())
        .expect("bench program runs");
    assert_eq!(status, 0);
}

fn bench_interp(c: &mut Criterion) {
    let mut group = c.benchmark_group("interp");
    group.sample_size(10);
    let programs = [
        ("while_1m_int_additions", ADDITIONS),
        ("method_calls_100k", METHOD_CALLS),
        ("str_pieces_100k_join", STRING_JOIN),
    ];
    for (name, source) in programs {
        group.bench_function(name, |b| b.iter(|| run(source)));
    }
    group.finish();
}

criterion_group!(benches, bench_interp);
criterion_main!(benches);
