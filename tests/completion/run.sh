#!/bin/bash
# The bash and zsh completion scripts (tools/completion), run against the built gpumem:
# commands, `help CMD`, options read from --help, an option's choices in both forms, files
# for a path, and a program after `--`. zsh's completion builtins are stood in for by
# functions that print what they are given (zsh is only checked where it is installed).
# usage: run.sh GPUMEM COMPLETION_DIR
gpumem=$1 dir=$2
fails=0
want() { # want WHAT GOT WORD...: every WORD is in GOT
  local what=$1 got=" $2 " w
  shift 2
  for w in "$@"; do
    if [[ $got != *" $w "* ]]; then
      echo "FAIL: $what: '$w' not offered; got:$got"
      fails=$((fails + 1))
      return
    fi
  done
  echo "ok   $what"
}
refuse() { # refuse WHAT GOT WORD: WORD is not in GOT
  if [[ " $2 " == *" $3 "* ]]; then echo "FAIL: $1: '$3' offered; got: $2"; fails=$((fails + 1)); else echo "ok   $1"; fi
}

source "$dir/gpumem.bash"
b() { COMP_WORDS=("$gpumem" "$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpumem; echo "${COMPREPLY[*]}"; }
cd "$(mktemp -d)" && trap 'rm -rf "$PWD"' EXIT && touch my.supp
want "bash: commands" "$(b '')" info check bench help --version
want "bash: a prefix" "$(b ch)" check
refuse "bash: a prefix" "$(b ch)" bench
want "bash: help CMD" "$(b help b)" bench
want "bash: check options" "$(b check -)" --leak-check --error-exitcode --log-file --json --suppressions --gen-suppressions -q --quiet --help --version
want "bash: bench options" "$(b bench --)" --quick --json --device
want "bash: info options" "$(b info --c)" --config
want "bash: choices, --opt VALUE" "$(b check --leak-check '')" no summary full
want "bash: choices, --opt=VALUE" "$(b check --leak-check = s)" summary
refuse "bash: choices, --opt=VALUE" "$(b check --leak-check = s)" full
want "bash: a path" "$(b check --suppressions m)" my.supp
want "bash: a program after --" "$(b check -- ech)" echo
want "bash: its arguments" "$(b check -- echo m)" my.supp

if command -v zsh >/dev/null; then
  z() { # z PREFIX WORD...: the words before the cursor, then what is typed at it
    local prefix=$1
    shift
    zsh -f -c '
      compadd() { while [[ $1 != -- && $# -gt 0 ]]; do shift; done; shift; print -r -- "$@" }
      _describe() { local -a c; c=(${(P)${@[-1]}}); print -r -- ${c%%:*} }
      _files() { print -r -- FILES }
      _normal() { print -r -- "NORMAL ${words[1]} $CURRENT" }
      compset() { PREFIX=${PREFIX#*=} }
      PREFIX=$1; shift
      words=("$@" "$PREFIX"); CURRENT=${#words}
      source "'"$dir"'/_gpumem"' zsh "$prefix" "$gpumem" "$@"
  }
  want "zsh: commands" "$(z '')" info check bench help
  want "zsh: top options" "$(z --)" --help --version
  want "zsh: help CMD" "$(z b help)" info check bench
  want "zsh: check options" "$(z - check)" --leak-check --json --quiet -q --suppressions
  want "zsh: bench options" "$(z -- bench)" --quick --json --device
  want "zsh: choices, --opt VALUE" "$(z '' check --leak-check)" no summary full
  want "zsh: choices, --opt=VALUE" "$(z --gen-suppressions= check)" no yes
  want "zsh: a path" "$(z '' check --json)" FILES
  want "zsh: after --" "$(z ech check --)" NORMAL
else
  echo "skip zsh: not installed"
fi
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
