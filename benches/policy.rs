//! Per-call cost of the policy check: the trie against the linear-scan
//! reference, at 16 to 4,096 grants, on depth-4, -8 and -16 paths that all
//! match the trie 4 components deep.
//!
//! Run: `cargo bench --bench policy -- --warm-up-time 1 --measurement-time 2`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use magus_sandbox::testing::policy::{
    new_policy, reference, Access, Grant, GrantSource, Mode, Network, NormalPath, Policy,
    SandboxState,
};
use std::hint::black_box;
use std::path::PathBuf;

const SIZES: [usize; 4] = [16, 256, 1_024, 4_096];
const DEPTHS: [usize; 3] = [4, 8, 16];

/// A small deterministic generator, so every run measures the same policy.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % bound
    }
}

/// `n` grants shaped like a real machine: a few top-level trees, many
/// siblings below, depths 1 to 6, mixed modes.
fn grants(n: usize) -> Vec<Grant> {
    let mut rng = Lcg(n as u64);
    (0..n)
        .map(|i| {
            let depth = 1 + rng.next(6);
            let mut path = PathBuf::from("/");
            for level in 0..depth {
                let width = [8, 32, 64, 64, 64, 64][level];
                path.push(format!("dir{}", rng.next(width)));
            }
            path.push(format!("grant{i}"));
            let mode = if rng.next(3) == 0 { Mode::Rw } else { Mode::Ro };
            Grant {
                path,
                mode,
                source: GrantSource::Builtin("bench"),
            }
        })
        .collect()
}

/// How deep in the trie every query matches: the same at every size, so
/// the sizes compare like with like (the cost of a check grows with the
/// number of components matched, not with the number of grants).
const MATCH_DEPTH: usize = 4;

/// A path of exactly `depth` components: the first grant `MATCH_DEPTH`
/// components deep (or the path's own first `depth` of them), then file
/// names beneath it.
fn query(grants: &[Grant], depth: usize) -> NormalPath {
    let base = grants
        .iter()
        .map(|g| g.path.clone())
        .find(|p| p.components().count() - 1 == MATCH_DEPTH.min(depth))
        .expect("every bench policy has a grant that deep");
    let mut path = base;
    while path.components().count() - 1 < depth {
        path.push("some-file.txt");
    }
    NormalPath::new(path).expect("bench paths are normal")
}

/// A sandbox-on policy of `grants` alone (no workspace, network allowed).
fn policy(grants: Vec<Grant>) -> Policy {
    new_policy(
        SandboxState::On,
        "/".into(),
        grants,
        Network::Allow,
        Vec::new(),
    )
}

fn bench_check(c: &mut Criterion) {
    for depth in DEPTHS {
        let mut group = c.benchmark_group(format!("check/depth{depth}"));
        for n in SIZES {
            let grants = grants(n);
            let path = query(&grants, depth);
            let policy = policy(grants);
            assert!(policy.check(&path, Access::Read).is_allowed());
            assert_eq!(
                policy.check(&path, Access::Write),
                reference::check(policy.grants(), &path, Access::Write)
            );
            group.bench_with_input(BenchmarkId::new("trie", n), &path, |b, path| {
                b.iter(|| policy.check(black_box(path), black_box(Access::Write)))
            });
            group.bench_with_input(BenchmarkId::new("reference", n), &path, |b, path| {
                b.iter(|| {
                    reference::check(policy.grants(), black_box(path), black_box(Access::Write))
                })
            });
        }
        group.finish();
    }
}

/// The worst case at depth 8: every component is a trie node, because the
/// policy also grants the whole 8-deep path (and, below it, nothing).
fn bench_all_matched(c: &mut Criterion) {
    let deep = NormalPath::new("/deep/a/b/c/d/e/f/grant").expect("a normal path");
    let mut group = c.benchmark_group("check/depth8_all_matched");
    for n in SIZES {
        let mut grants = grants(n);
        grants.push(Grant {
            path: deep.as_path().to_path_buf(),
            mode: Mode::Rw,
            source: GrantSource::Builtin("bench"),
        });
        let policy = policy(grants);
        assert!(policy.check(&deep, Access::Write).is_allowed());
        group.bench_with_input(BenchmarkId::new("trie", n), &deep, |b, path| {
            b.iter(|| policy.check(black_box(path), black_box(Access::Write)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_check, bench_all_matched);
criterion_main!(benches);
