//! Ordinary work still works under the kernel layer, through the real
//! `magus` binary: a child compiles C into the workspace, `git` makes a
//! repository and a commit, and renames work within the workspace and
//! within `/tmp` — while the same children still cannot touch `HOME`.

mod support;

use support::{buzz_str, Harness};

/// A spell that runs each shell line as a child and prints its status.
fn steps_spell(lines: &[String]) -> String {
    let calls: String = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            format!(
                "    std.print(\"step {i}: {{sh.shell({})}}\");\n",
                buzz_str(line)
            )
        })
        .collect();
    format!("import \"std\";\nimport \"sh\";\nfun main(args: [str]) > int {{\n{calls}    return 0;\n}}\n")
}

#[test]
fn compile_commit_and_rename_work_but_home_stays_closed() {
    let h = Harness::new();
    // The jail's /tmp is private to the run: the directory is made in it.
    let tmp = "/tmp/kernel-work";
    let home = h.home_path("").display().to_string();
    let lines = vec![
        "printf '#include <stdio.h>\\nint main(void){puts(\"ok\");return 0;}\\n' > hello.c".to_string(),
        "cc -o hello hello.c && ./hello".to_string(),
        "git init -q repo && cd repo && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m first && git log --oneline | wc -l".to_string(),
        "echo a > a.txt && mv a.txt b.txt && test -f b.txt".to_string(),
        format!("mkdir -p {tmp} && echo t > {tmp}/x && mv {tmp}/x {tmp}/y && test -f {tmp}/y"),
        format!("cat {home}/.ssh/id_rsa"),
        format!("echo evil >> {home}/.bashrc"),
        format!("mv {home}/.aws/credentials ./stolen"),
    ];
    h.write_spell("work", &steps_spell(&lines));
    let out = h.run("work", &[]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    for ok in 0..5 {
        assert!(
            out.stdout.contains(&format!("step {ok}: 0\n")),
            "step {ok}: {}",
            out.dump()
        );
    }
    for refused in 5..8 {
        let line = format!("step {refused}: 0\n");
        assert!(
            !out.stdout.contains(&line),
            "step {refused} succeeded: {}",
            out.dump()
        );
    }
    assert!(out.stdout.contains("ok\n"), "{}", out.dump());
    assert!(h.ws_path("repo/.git").is_dir());
    assert!(!h.ws_path("stolen").exists());
    h.assert_no_leak(&out);
    h.assert_secrets_intact();
}
