#!/bin/sh
# ci_recipes.py must fail a recipe that is wrong: a misspelt option, an upload of another
# file than lint writes, a hook id the hooks file lacks, YAML that does not parse.
# usage: selftest.sh PYTHON CI_RECIPES PAGE HOOKS GPUMEM
py=$1 script=$2 page=$3 hooks=$4 gpumem=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect_fail() { # expect_fail WHAT PATTERN SED_EXPRESSION
  sed "$3" "$page" > "$tmp/ci.md"
  out=$("$py" "$script" check "$tmp/ci.md" "$hooks" "$gpumem" 2>&1)
  if [ $? -eq 1 ] && printf '%s\n' "$out" | grep -qF -- "$2"; then echo "ok   $1"; else
    echo "FAIL: $1: not refused with '$2':"; printf '%s\n' "$out" | grep -v '^ok'; fails=$((fails + 1)); fi
}
expect_fail "a misspelt option" "not in \`gpumem check --help\`" 's|    - ctest --test-dir build --output-on-failure|    - gpumem check --leak-chek=full -- ./a|'
expect_fail "another SARIF file uploaded" "the uploaded file is the one lint writes" 's/sarif_file: gpumem-lint.sarif/sarif_file: other.sarif/'
expect_fail "an unknown hook id" "uses hooks the hooks file defines" 's/- id: gpumem-lint/- id: gpumem-lnt/'
expect_fail "YAML that does not parse" "gitlab-ci.yml parses" 's/^  stage: test$/  stage: [test/'
expect_fail "an unknown subcommand" "gpumem chek exists" 's/- gpumem lint src\//- gpumem chek src\//'
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
