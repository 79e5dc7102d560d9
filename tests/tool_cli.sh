#!/bin/sh
# The `gpumem` command line shared by every subcommand (tools/cli.c): `gpumem help CMD` is
# `gpumem CMD --help`, -h/--help and --version everywhere, "did you mean" for a misspelt
# command or option, both `--opt value` and `--opt=value`, usage errors exit 2.
# usage: tool_cli.sh GPUMEM
gpumem=$1
fails=0
expect() { # expect STATUS PATTERN ARGS...: the status, and PATTERN (grep -F) in the output
  want=$1 pattern=$2
  shift 2
  out=$("$gpumem" "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -qF -- "$pattern"; then
    echo "FAIL: gpumem $*: status $got (want $want, output with '$pattern'):"
    printf '%s\n' "$out"
    fails=$((fails + 1))
  else
    echo "ok   gpumem $*"
  fi
}
same() { # same ARGS1... == ARGS2...: both print the same and exit 0
  a="" b="" seen=0
  for x in "$@"; do
    if [ "$x" = "==" ]; then seen=1; continue; fi
    if [ $seen -eq 0 ]; then a="$a $x"; else b="$b $x"; fi
  done
  oa=$($gpumem $a 2>&1); sa=$?
  ob=$($gpumem $b 2>&1); sb=$?
  if [ "$sa" -ne 0 ] || [ "$sb" -ne 0 ] || [ "$oa" != "$ob" ] || [ -z "$oa" ]; then
    echo "FAIL: gpumem$a ($sa) and gpumem$b ($sb) differ"; fails=$((fails + 1))
  else
    echo "ok   gpumem$a == gpumem$b"
  fi
}
for cmd in info check bench; do
  same help $cmd == $cmd --help
  same $cmd -h == $cmd --help
  expect 0 "gpumem $cmd " $cmd --version
  expect 0 "usage: gpumem $cmd" help $cmd
done
# One version everywhere: every command's --version is gpumem's (lint's and report's too).
version=$("$gpumem" --version | sed -n 's/^gpumem //p')
for cmd in info check bench lint report; do
  "$gpumem" help "$cmd" >/dev/null 2>&1 || continue # lint: not built without jansson
  expect 0 "gpumem $cmd $version" $cmd --version
done
expect 0 "gpumem help COMMAND" help
expect 0 "usage: gpumem" --help
expect 2 "unknown command 'chek'; did you mean check?" chek
# Two letters swapped are one edit, as a typo is.
expect 2 "unknown command 'lnit'; did you mean lint?" lnit
expect 2 "unknown option '--qiuck'; did you mean --quick?" bench --qiuck
expect 2 "unknown command 'bnech'" help bnech
expect 2 "unknown command 'inf'; did you mean info?" help inf
expect 2 "unknown option '--verison'; did you mean --version?" --verison
expect 2 "unknown command 'zzzzzz'" zzzzzz
expect 2 "unknown option '--confg'; did you mean --config?" info --confg
# lint reads its options with the same grammar and words.
if "$gpumem" help 2>&1 | grep -q '^ *lint'; then
  expect 2 "gpumem lint: error: unknown option '--formt'; did you mean --format?" lint --formt=json x.cu
  expect 2 "(\`gpumem lint --help\` lists the options)" lint --formt=json x.cu
  expect 2 "gpumem lint: error: --jobs needs a value (--jobs VALUE or --jobs=VALUE)" lint x.cu -j
fi
# Without a usable device the report is still whole: it says so, names what works, exits 0.
out=$(GPUMEM_BACKEND=cuda GPUMEM_LIBCUDA=/nonexistent/libcuda.so.1 "$gpumem" info 2>&1)
st=$?
if [ $st -ne 0 ] || ! printf '%s\n' "$out" | grep -q "^devices: none usable" ||
   ! printf '%s\n' "$out" | grep -q "gpumem lint works" || ! printf '%s\n' "$out" | grep -q "GPUMEM_BACKEND=sim"; then
  echo "FAIL: gpumem info without a device: status $st:"; printf '%s\n' "$out"; fails=$((fails + 1))
else
  echo "ok   gpumem info without a device"
fi
expect 2 "unknown option '--qiuck'" bench --qiuck
expect 2 "did you mean --quick?" bench --quik
expect 2 "unexpected argument 'x' (gpumem info takes options only)" info x
expect 2 "unexpected argument 'x'" info -- x
expect 2 "unexpected argument '--config'" info -- --config
expect 2 "--config takes no value (not 'yes')" info --config=yes
expect 2 "--device needs a value (--device VALUE or --device=VALUE)" bench --device
expect 2 "--device takes a device number, not 'x'" bench --device x
expect 2 "--device takes a device number, not 'x'" bench --device=x
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
