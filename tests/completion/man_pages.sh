#!/bin/sh
# The man pages (tools/completion/CMakeLists.txt, help2man): one per command, each holding
# every option its --help lists, and readable by man.
# usage: man_pages.sh GPUMEM MAN_DIR COMMAND...
gpumem=$1 dir=$2
shift 2
fails=0
for cmd in gpumem "$@"; do
  if [ "$cmd" = gpumem ]; then page=$dir/gpumem.1 help=$("$gpumem" --help); else
    page=$dir/gpumem-$cmd.1 help=$("$gpumem" "$cmd" --help); fi
  if [ ! -s "$page" ]; then echo "FAIL: $page is missing"; fails=$((fails + 1)); continue; fi
  text=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$page")
  missing=""
  for opt in $(printf '%s\n' "$help" | sed -n -E 's/^ +(-[^ ].*)$/\1/p' | sed -E 's/   .*//; s/  [a-z(].*//' |
               grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,'); do
    printf '%s\n' "$text" | grep -qF -- "$opt" || missing="$missing $opt"
  done
  first=$(printf '%s\n' "$help" | head -1)
  printf '%s\n' "$text" | grep -qF -- "$first" || missing="$missing [usage line]"
  if [ -n "$missing" ]; then echo "FAIL: $page lacks$missing"; fails=$((fails + 1)); continue; fi
  if command -v man >/dev/null && ! man -l "$page" >/dev/null 2>&1; then
    echo "FAIL: man -l $page"; fails=$((fails + 1)); continue
  fi
  echo "ok   $page"
done
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
