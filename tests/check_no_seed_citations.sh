#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if a comment or a document cites a text a reader of this repository
# cannot open ("seed 001", "seed 002's GetBody", "the seeds' Host.Dial",
# "revision 1"): say what the rule is, or cite the public standard it comes
# from. A random seed ("seeded from the OS", "--seed=7", "a fixed seed") and
# the fuzzers' seed corpus are not citations. CHANGELOG.md is history.
set -u
root=$1
paths=("$root/include" "$root/src" "$root/tools" "$root/docs" "$root/tests" "$root/bench"
       "$root/examples" "$root/fuzz" "$root/README.md")
self=check_no_seed_citations.sh
hits=$(grep -rnIiE \
  -e "\bseeds? 0[0-9]{2}\b" \
  -e "\bseeds'" \
  -e "\bseed's\b" \
  -e "\b(as|like|per) (in )?the seeds\b" \
  -e "\bthe seeds (say|says|said|ask|asks|asked|call|calls|describe|describes|do|does)\b" \
  -e "\brevision [0-9]+\b" \
  --exclude="$self" "${paths[@]}")
# The same citation wrapped after "seed" or "revision", its number on the next line.
# shellcheck disable=SC2016  # the single quotes hold an awk program
wrapped=$(grep -rlIiZE --exclude="$self" "(^|[^a-z])(seeds?|revision)[[:space:]]*$" \
            "${paths[@]}" | xargs -0 -r awk '
  FNR == 1 { prev = "" }
  {
    line = tolower($0)
    sub(/^[ \t]*(\/\/|#|\*)?[ \t]*/, "", line)
    if ((prev ~ /(^|[^a-z])seeds?[ \t]*$/ && line ~ /^0[0-9][0-9]([^0-9]|$)/) ||
        (prev ~ /(^|[^a-z])revision[ \t]*$/ && line ~ /^[0-9]+([^0-9]|$)/))
      print FILENAME ":" FNR - 1 ":" prevraw " / " $0
    prev = tolower($0)
    prevraw = $0
  }')
hits=$(printf '%s\n%s' "$hits" "$wrapped" | sed '/^$/d')
if [ -n "$hits" ]; then
  echo "citations of texts this repository does not hold:"
  echo "$hits"
  exit 1
fi
echo "no comment or document cites a text this repository does not hold"
