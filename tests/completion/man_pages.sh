#!/bin/sh
# The man pages (tools/completion/CMakeLists.txt, help2man): one per command, each holding
# every option its --help lists, and readable by man; rendered, every option and table row
# (lint's rules) that starts a line of --help starts a line of the page, and no line runs two
# table rows together (help2man reads a two-column table as prose and fills it).
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
  if command -v nroff >/dev/null; then
    shown=$(MANWIDTH=80 nroff -man -Tutf8 "$page" 2>/dev/null | sed 's/.\x08//g')
    for word in $(printf '%s\n' "$help" |
                  sed -n 's/^  *\(-[-a-zA-Z][-a-zA-Z0-9]*\|GM[0-9][0-9]*\)\([ ,=].*\)\{0,1\}$/\1/p'); do
      [ "$word" = "--" ] && continue
      printf '%s\n' "$shown" | grep -Eq -- "^ +$word([ ,=]|\$)" || missing="$missing $word"
    done
    if [ -n "$missing" ]; then
      echo "FAIL: $page: these do not start a line when rendered:$missing"; fails=$((fails + 1)); continue
    fi
    if printf '%s\n' "$shown" | grep -Eq 'GM[0-9]{3}.*  GM[0-9]{3}  '; then
      echo "FAIL: $page: table rows run together when rendered:"
      printf '%s\n' "$shown" | grep -E 'GM[0-9]{3}.*  GM[0-9]{3}  '; fails=$((fails + 1)); continue
    fi
  fi
  echo "ok   $page"
done
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
