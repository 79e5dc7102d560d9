#!/bin/sh
# scripts/install's command line, before it builds anything: --help, a usage error (2), and a
# PREFIX it cannot make (1, with what to do).
# usage: script_args.sh SOURCE_DIR
install=$1/scripts/install
fails=0
expect() { # expect STATUS PATTERN ARGS...
  want=$1 pattern=$2
  shift 2
  out=$("$install" "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -qF -- "$pattern"; then
    echo "FAIL: scripts/install $*: status $got (want $want), output:"; printf '%s\n' "$out"
    fails=$((fails + 1))
  else
    echo "ok   scripts/install $*"
  fi
}
expect 0 "usage: scripts/install [PREFIX]" --help
expect 2 "unknown option '--frob'" --frob
expect 2 "one PREFIX at most" /tmp/a /tmp/b
expect 1 "cannot make /proc/gpumem; choose a PREFIX you can write to" /proc/gpumem
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
