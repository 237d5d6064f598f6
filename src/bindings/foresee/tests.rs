//! What the walk finds in a spell's source: which calls, which literal
//! arguments, and which are fatal. (What the gate says of them is tested
//! through the binary: tests/foresee.rs.)

use super::calls;
use super::table::Gated;
use crate::enforce::gate::{FsOp, PathUse};
use std::path::Path;

/// Each call found in `source`: its first gate question, its line, and
/// whether it is fatal.
fn found(source: &str) -> Vec<(Gated, u32, bool)> {
    let program = crate::buzz::parse(Path::new("probe.buzz"), source).expect("parses");
    calls(&program)
        .into_iter()
        .filter_map(|c| {
            let (gated, at) = c.checks.first()?.clone();
            Some((gated, at.line, c.fatal))
        })
        .collect()
}

fn read(path: &str) -> Gated {
    Gated::Path {
        op: FsOp::Read,
        usage: PathUse::Read,
        spelled: path.to_string(),
    }
}

#[test]
fn literals_interpolations_and_finals_are_settled_and_nothing_else() {
    let source = r#"import "fs";
final home = "/h";
fun main(args: [str]) > void {
    fs.read("/a");
    fs.read("{home}/.aws/credentials");
    final dir = "/d" + "/e";
    fs\read("{dir}/{2}");
    var moving = "/m";
    fs.read(moving);
    fs.read(args[0]);
    fs.read("{args[0]}/x");
}
"#;
    assert_eq!(
        found(source),
        vec![
            (read("/a"), 4, true),
            (read("/h/.aws/credentials"), 5, true),
            (read("/d/e/2"), 7, true),
        ]
    );
}

#[test]
fn a_try_that_catches_it_makes_a_warning_and_others_do_not() {
    let source = r#"import "fs";
fun main(args: [str]) > void {
    try { fs.read("/a"); } catch (e: SandboxError) {}
    try { fs.read("/b"); } catch {}
    try { fs.read("/c"); } catch (e: any) {}
    try { fs.read("/d"); } catch (e: FileSystemError) {}
    try { fs.read("/e"); } catch (e: str) {} catch (e: obj) {}
    final x = fs.read("/f") catch "";
    try {} catch (e: SandboxError) { fs.read("/g"); }
}
"#;
    let fatal: Vec<(Gated, bool)> = found(source).into_iter().map(|(g, _, f)| (g, f)).collect();
    assert_eq!(
        fatal,
        vec![
            (read("/a"), false),
            (read("/b"), false),
            (read("/c"), false),
            (read("/d"), true),
            (read("/e"), false),
            (read("/f"), false),
            (read("/g"), true),
        ]
    );
}

#[test]
fn only_code_main_reaches_outside_a_try_is_fatal() {
    let source = r#"import "fs";
fun direct() > void { fs.read("/direct"); }
fun deeper() > void { fs.read("/deeper"); }
fun via() > void { deeper(); }
fun guarded() > void { fs.read("/guarded"); }
fun unused() > void { fs.read("/unused"); }
object O { fun m() > void { fs.read("/method"); } }
test "t" { fs.read("/test"); }
final top = fs.exists("/top");
fun main(args: [str]) > void {
    direct();
    via();
    try { guarded(); } catch (e: SandboxError) {}
    final f = fun () > void { fs.read("/lambda"); };
}
"#;
    let fatal: Vec<(String, bool)> = found(source)
        .into_iter()
        .map(|(g, _, f)| match g {
            Gated::Path { spelled, .. } => (spelled, f),
            other => panic!("{other:?}"),
        })
        .collect();
    let want = [
        ("/direct", true),
        ("/deeper", true),
        ("/guarded", false),
        ("/unused", false),
        ("/method", false),
        ("/test", false),
        ("/top", true),
        ("/lambda", false),
    ];
    let want: Vec<(String, bool)> = want.iter().map(|(p, f)| (p.to_string(), *f)).collect();
    assert_eq!(fatal, want);
}

#[test]
fn modules_are_known_by_import_and_shadowing_hides_them() {
    let source = r#"import "magus:fs" as files;
import "sh";
import read from "fs";
import "buzz:os";
import "buzz:io";
fun main(args: [str]) > void {
    files.write("/w", "x");
    read("/r");
    sh.run(["/bin/prog", "arg"]);
    sh.shell("anything");
    os\execute(["tool"]);
    io\File.open("/o", mode: .update);
    final sh = args;
    sh.run(["/not/the/module"]);
}
fun other(fs: str) > void { fs.read("/a parameter named fs"); }
"#;
    let gated: Vec<Gated> = found(source).into_iter().map(|(g, _, _)| g).collect();
    assert_eq!(
        gated,
        vec![
            Gated::Path {
                op: FsOp::Write,
                usage: PathUse::Write,
                spelled: "/w".into()
            },
            read("/r"),
            Gated::Program("/bin/prog".into()),
            Gated::Program("/bin/sh".into()),
            Gated::Program("tool".into()),
            Gated::Path {
                op: FsOp::Append,
                usage: PathUse::Write,
                spelled: "/o".into()
            },
        ]
    );
}

#[test]
fn a_second_path_is_a_need_but_not_a_certain_question() {
    let source = r#"import "fs";
import "env";
fun main(args: [str]) > void {
    fs.copy("/from", "/to");
    fs.delete("/gone");
    final token = env.get("TOKEN");
}
"#;
    let program = crate::buzz::parse(Path::new("probe.buzz"), source).expect("parses");
    let calls = calls(&program);
    let checks: Vec<usize> = calls.iter().map(|c| c.checks.len()).collect();
    assert_eq!(checks, vec![1, 1, 1]);
    assert_eq!(calls[0].needs.len(), 2);
    assert_eq!(calls[2].needs, vec![Gated::Variable("TOKEN".into())]);
    assert!(matches!(
        calls[1].needs[0],
        Gated::Path {
            usage: PathUse::Remove,
            ..
        }
    ));
}
