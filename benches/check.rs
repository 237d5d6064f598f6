//! The spell checker's speed (issue 14): `magus check` of a 5,000-line
//! spell, end to end through the binary (start-up, policy, parse, check),
//! and the parse and check alone through the library. Target: under 50 ms.

use criterion::{criterion_group, criterion_main, Criterion};
use magus_sandbox::testing::buzz::{self, Interpreter};
use std::fmt::Write;
use std::path::Path;
use std::process::Command;

/// One 20-line unit of an ordinary build spell: an object, a function
/// with locals, a loop, list and map work, calls and interpolation.
fn unit(i: usize) -> String {
    format!(
        r#"object Step{i} {{
    name: str,
    weight: int = {i},

    fun describe() > str {{
        return "{{this.name}} ({{this.weight}})";
    }}
}}

fun work{i}(items: [str], factor: int) > int {{
    final step = Step{i}{{ name = "step {i}" }};
    var total = 0;
    foreach (item in items) {{
        total = total + item.len() * factor;
    }}
    final names = mut ["a", "b"];
    names.append(step.describe());
    std\print("{{names.len()}} {{total}}");
    return total + step.weight;
}}
"#
    )
}

/// A spell of at least `lines` lines that checks clean.
fn spell(lines: usize) -> String {
    let mut source = String::from("import \"buzz:std\";\n\n");
    let mut i = 0;
    while source.lines().count() < lines {
        source.push_str(&unit(i));
        i += 1;
    }
    let _ = writeln!(
        source,
        "fun main(args: [str]) > void {{\n    _ = work0(args, 2);\n}}"
    );
    source
}

fn bench_check(c: &mut Criterion) {
    let source = spell(5_000);
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("magus.yaml"), "").expect("magus.yaml");
    std::fs::create_dir_all(dir.path().join("spells")).expect("spells/");
    let file = dir.path().join("spells/big.buzz");
    std::fs::write(&file, &source).expect("the spell");
    let lib = |file: &Path| {
        let program = buzz::parse(file, &source).expect("the spell parses");
        let report = Interpreter::new(file, Vec::new()).check(&program, &source);
        assert!(report.is_clean(), "{:?}", report.diagnostics());
    };
    lib(&file);
    let magus = || {
        let status = Command::new(env!("CARGO_BIN_EXE_magus"))
            .arg("--workspace")
            .arg(dir.path())
            .args(["check", "big"])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("magus runs");
        assert!(status.success());
    };
    magus();
    let mut group = c.benchmark_group("check");
    group.bench_function("parse and check, 5,000 lines (library)", |b| {
        b.iter(|| lib(&file))
    });
    group.bench_function("magus check, 5,000 lines (binary)", |b| b.iter(magus));
    group.finish();
}

criterion_group!(benches, bench_check);
criterion_main!(benches);
