//! `magus completions SHELL`: clap's script for the shell, plus what clap
//! cannot know ahead of time: the spell names of the workspace at hand,
//! asked of `magus list --names` when `run`, `test`, `check`, `sandbox
//! check` or `sandbox suggest` wants one.
//! The diagnostic codes `explain` takes are static possible values
//! ([`CodeParser`]), which clap's scripts offer by themselves.

use crate::diag::Code;
use clap::builder::{PossibleValue, TypedValueParser};
use clap_complete::Shell;

/// The script for `shell`, completing `bin`'s commands and spells.
pub(super) fn script(shell: Shell, command: &mut clap::Command, bin: &str) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, command, bin, &mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let text = match shell {
        Shell::Bash => format!("{text}{BASH}"),
        Shell::Zsh => zsh(&text),
        Shell::Fish => format!("{text}{FISH}{}", fish_codes()),
        _ => text,
    };
    text.into_bytes()
}

/// After clap's `_magus`: a wrapper that offers the spells where a spell
/// goes (the first word after `run`, `sandbox check` and `sandbox
/// suggest`; any word after `test` and `check`)
/// and hands every other place to `_magus`. Registered last, it replaces
/// clap's registration; without spells to offer (a path, no workspace)
/// bash falls back to file names.
const BASH: &str = r#"
_magus_spells() {
    local i ws=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            --workspace) ws=(--workspace "${COMP_WORDS[i+1]}") ;;
            --workspace=*) ws=("${COMP_WORDS[i]}") ;;
        esac
    done
    "${COMP_WORDS[0]}" "${ws[@]}" list --names 2>/dev/null
}

_magus_with_spells() {
    local i word cmd="" sub="" after=0 cur="${COMP_WORDS[COMP_CWORD]}"
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        case "$word" in
            --workspace|--message-format|--color) ((i++)) ;;
            -*) ;;
            *) if [[ -z "$cmd" ]]; then cmd="$word"; else [[ -z "$sub" ]] && sub="$word"; ((after++)); fi ;;
        esac
    done
    if [[ "$cur" != -* ]] && { [[ "$cmd" == run && $after -eq 0 ]] || [[ "$cmd" == test || "$cmd" == check ]] || [[ "$cmd" == sandbox && $after -eq 1 && ( "$sub" == check || "$sub" == suggest ) ]]; }; then
        COMPREPLY=( $(compgen -W "$(_magus_spells)" -- "$cur") )
        return 0
    fi
    _magus "$@"
}

complete -F _magus_with_spells -o bashdefault -o default magus
"#;

/// clap's zsh script with the spell arguments of `run`, `test`,
/// `check`, `sandbox check` and `sandbox suggest` completed by
/// `_magus_spells`.
fn zsh(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let spell = ["'::spell -- ", "':spell -- ", "'*::spells -- "]
            .iter()
            .any(|p| line.starts_with(p));
        match line.strip_suffix(":_default' \\") {
            Some(head) if spell => out.push_str(&format!("{head}:_magus_spells' \\")),
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    match out.rfind("if [ \"$funcstack[1]\" = \"_magus\" ]") {
        Some(at) => out.insert_str(at, ZSH_SPELLS),
        None => out.push_str(ZSH_SPELLS),
    }
    out
}

const ZSH_SPELLS: &str = r#"(( $+functions[_magus_spells] )) ||
_magus_spells() {
    local -a spells
    spells=(${(f)"$(_call_program spells magus list --names 2>/dev/null)"})
    _describe -t spells 'spell' spells
    _files -g '*.buzz'
}

"#;

/// After clap's lines: the spells, for the first word after `run`,
/// `sandbox check` and `sandbox suggest`, and every word after `test`
/// and `check`.
const FISH: &str = r#"
function __fish_magus_spells
    set -l tokens (commandline -opc)
    set -l ws
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case --workspace
                set ws --workspace $tokens[(math $i + 1)]
            case '--workspace=*'
                set ws $tokens[$i]
        end
    end
    magus $ws list --names 2>/dev/null
end

function __fish_magus_wants_spell
    set -l tokens (commandline -opc)
    set -l cmd
    set -l sub
    set -l after 0
    set -l skip 0
    for token in $tokens[2..-1]
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $token
            case --workspace --message-format --color
                set skip 1
            case '-*'
            case '*'
                if test -z "$cmd"
                    set cmd $token
                else
                    if test -z "$sub"
                        set sub $token
                    end
                    set after (math $after + 1)
                end
        end
    end
    test "$cmd" = run -a $after -eq 0; or test "$cmd" = test; or test "$cmd" = check
    or test "$cmd" = sandbox -a $after -eq 1 -a \( "$sub" = check -o "$sub" = suggest \)
end

complete -c magus -n __fish_magus_wants_spell -a "(__fish_magus_spells)" -d spell
"#;

/// The codes for `explain`, which clap's fish script leaves out (it
/// offers no positional argument's values).
fn fish_codes() -> String {
    let codes: Vec<String> = Code::ALL
        .iter()
        .map(|c| format!("{c}\t'{}'", c.summary().replace('\'', "\\'")))
        .collect();
    format!(
        "complete -c magus -n \"__fish_magus_using_subcommand explain\" -f -a \"{}\"\n",
        codes.join("\n")
    )
}

/// `explain`'s argument: any text (an unknown code gets magus's own
/// error, with the list of codes), offered to completion as the codes,
/// each with its summary.
#[derive(Clone)]
pub(super) struct CodeParser;

impl TypedValueParser for CodeParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            Code::ALL
                .into_iter()
                .map(|c| PossibleValue::new(c.as_str()).help(c.summary())),
        ))
    }
}
