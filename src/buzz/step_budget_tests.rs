//! The step budget ([`super::Interpreter::with_step_budget`]): calls and
//! loop turns are counted, across fibers, and a spell that runs past the
//! budget stops with a located error.

use super::{parse, stack, Interpreter};
use std::path::Path;

/// Runs `source` with a budget of `steps`: the exit status or the
/// error's text.
fn run(source: &str, steps: u64) -> Result<i32, String> {
    let source = source.to_string();
    stack::run_on_interpreter_stack(move || {
        let file = Path::new("steps.buzz");
        let program = parse(file, &source).map_err(|e| e.to_string())?;
        Interpreter::new(file, Vec::new())
            .with_output(Box::new(std::io::sink()))
            .with_stack_budget(stack::stack_budget(stack::interpreter_stack()))
            .with_step_budget(steps)
            .run(&program, Vec::new())
            .map_err(|e| e.to_string())
    })
    .expect("interpreter thread starts")
}

fn assert_stopped_at(result: Result<i32, String>, line: u32) {
    let error = result.expect_err("the budget stops the spell");
    let at = format!("steps.buzz:{line}:");
    assert!(error.starts_with(&at), "not at line {line}: {error}");
    assert!(error.contains("step limit"), "{error}");
}

/// `main` is one call; each loop turn one step.
const TEN_TURNS: &str = "
fun main() > void {
    var i = 0;
    while (i < 10) {
        i = i + 1;
    }
}
";

#[test]
fn a_run_within_its_budget_ends_normally_and_one_step_less_stops_it() {
    assert_eq!(run(TEN_TURNS, 11), Ok(0));
    assert_stopped_at(run(TEN_TURNS, 10), 4);
}

/// A loop takes one step per turn, whether the turn starts at the
/// loop's entry, after its body or at a `continue`: ten turns are ten
/// steps for a `foreach` over a range written in the loop and over a
/// list, and for a `while` and a `for` whose test is one comparison or
/// needs a call.
#[test]
fn every_loop_takes_one_step_per_turn() {
    let bodies = [
        "foreach (i in 0..10) {}",
        "foreach (i in 0..10) { if (i > 4) { continue; } }",
        "foreach (x in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {}",
        "foreach (x in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) { if (x > 4) { continue; } }",
        "var i = 0; while (i < 10) { i = i + 1; if (i > 4) { continue; } }",
        "final l = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]; var i = 0; while (i < l.len()) { i = i + 1; }",
        "for (i: int = 0; i < 10; i = i + 1) { if (i > 4) { continue; } }",
    ];
    for body in bodies {
        let source = format!("fun main() > void {{\n    {body}\n}}\n");
        assert_eq!(run(&source, 11), Ok(0), "{body}");
        assert_stopped_at(run(&source, 10), 2);
    }
}

#[test]
fn endless_loops_of_every_kind_stop_at_the_loop() {
    let loops = [
        ("while (true) {}", 3),
        ("for (i: int = 0; true; i = i + 1) {}", 3),
        ("do {} until (false);", 3),
        ("foreach (i in 0..9223372036854775807) {}", 3),
        ("while (true) { while (true) {} }", 3),
    ];
    for (body, line) in loops {
        let source = format!("fun main() > void {{\n    var n = 0;\n    {body}\n}}\n");
        assert_stopped_at(run(&source, 1_000), line);
    }
}

#[test]
fn top_level_loops_count_too() {
    assert_stopped_at(
        run("var n = 0;\nwhile (n >= 0) {\n    n = n + 1;\n}\n", 500),
        2,
    );
}

/// Calls without any loop: `fib(40)` makes hundreds of millions.
#[test]
fn calls_count_so_exponential_recursion_stops() {
    let source = "
fun fib(n: int) > int {
    if (n < 2) {
        return n;
    }
    return fib(n - 1) + fib(n - 2);
}

fun main() > void {
    _ = fib(40);
}
";
    let error = run(source, 10_000).unwrap_err();
    assert!(error.contains("step limit"), "{error}");
}

/// Each loop turn makes a call that throws and catches it; the step limit
/// is no Buzz error, so `catch` does not stop it (it stops at the call,
/// the step the budget runs out on).
#[test]
fn the_step_limit_cannot_be_caught() {
    let source = "
fun spin() > void !> str {
    throw \"again\";
}

fun main() > void {
    while (true) {
        spin() catch void;
    }
}
";
    assert_stopped_at(run(source, 1_000), 8);
}

/// A fiber loops 30 turns and main 30 (resuming it): 60 and more steps
/// in all, though each side alone stays under 50.
#[test]
fn fibers_draw_on_the_spell_s_budget() {
    let source = "
fun gen() > void *> int {
    for (i: int = 0; i < 30; i = i + 1) {
        _ = yield i;
    }
}

fun main() > void {
    final f = &gen();
    for (j: int = 0; j < 30; j = j + 1) {
        _ = resume f;
    }
}
";
    assert_eq!(run(source, 1_000), Ok(0));
    let error = run(source, 50).unwrap_err();
    assert!(error.contains("step limit"), "{error}");
}
