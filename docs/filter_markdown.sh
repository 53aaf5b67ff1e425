#!/usr/bin/env bash
# Doxygen input filter for the Markdown pages (FILTER_PATTERNS in Doxyfile.in): prints the page
# given as $1 rewritten for Doxygen. The pages are written to read well on a Git forge, so:
#  - math: a ```math block becomes \f[ ... \f], and $`...`$ becomes \f$...\f$ (the forge's two
#    math syntaxes; Doxygen renders both forms of its own with MathJax);
#  - backticks inside a link's text are dropped: Doxygen shows them literally in a link;
#  - a link to a header under common/include or kernels/include becomes an @ref to its file page;
#  - a link to any other source file (.cpp, .hpp, .cu, .sh) goes to its source page,
#    <name>_source.html (those files are inputs too, through filter_source_only.sh);
#  - a link to another file of the repository (CMakeLists.txt: Doxygen writes no page for .txt
#    files) becomes its name in a <span class="repofile">, which scripts/check_docs.sh accepts;
#  - a link to a folder becomes a link to the folder's README page when it has one.
# Plain bash and sed: no Python in the build.
set -euo pipefail
page="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
page_dir="$(cd "$(dirname "$page")" && pwd)"

# Doxygen's file names for pages (escapeCharsInString): '_' -> '__', '/' -> '_2', '.' -> '_8',
# '-' -> '-'. A source file whose name is unique among the inputs gets its bare name; files that
# share a name (every chapter's main.cpp) keep their path below the folder the group has in
# common.
disk_name() {
  printf '%s' "$1" | sed -e 's/_/__/g' -e 's#/#_2#g' -e 's/\./_8/g'
}
source_inputs_uncached() {
  (cd "$root" && find common/src kernels/src chapters exercises tests -type f \
      \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.sh' \) \
      ! -path 'common/include/*' ! -path 'kernels/include/*' | sort
)
}
source_inputs_list="$(source_inputs_uncached)"  # once per page
source_page() {  # repository path -> the HTML page of its source
  local path="$1" base same prefix
  base="$(basename "$path")"
  mapfile -t same < <(printf "%s\n" "$source_inputs_list" | grep -E "(^|/)${base//./\\.}\$" || true)
  if [ "${#same[@]}" -le 1 ]; then
    printf '%s_source.html' "$(disk_name "$base")"
    return
  fi
  # The longest folder prefix all of them share.
  prefix="$(dirname "${same[0]}")/"
  for p in "${same[@]}"; do
    while [ -n "$prefix" ] && [ "${p#"$prefix"}" = "$p" ]; do
      prefix="$(dirname "${prefix%/}")/"
      [ "$prefix" = "./" ] && prefix=""
    done
  done
  printf '%s_source.html' "$(disk_name "${path#"$prefix"}")"
}

rewrite_link() {  # $1 = link target as written; prints the target Doxygen should see
  local target="$1" abs rel
  case "$target" in
    http:*|https:*|mailto:*|\#*|@ref*|*.md|*.md\#*|*.svg|*.png) printf '%s' "$target"; return ;;
  esac
  abs="$(realpath -m "$page_dir/$target")"
  rel="${abs#"$root"/}"
  case "$rel" in
    common/include/*.hpp|kernels/include/*.hpp)
      printf '@ref %s' "${rel#*/include/}" ;;
    *.cpp|*.hpp|*.cu|*.cuh|*.sh)
      if [ -f "$root/$rel" ]; then source_page "$rel"; else printf '%s' "$target"; fi ;;
    *)
      if [ -d "$root/$rel" ] && [ -f "$root/$rel/README.md" ]; then
        printf '%s' "$(realpath --relative-to="$page_dir" "$root/$rel/README.md")"
      elif [ -f "$root/$rel" ]; then
        printf 'repofile:'  # a file Doxygen writes no page for (CMakeLists.txt, .json)
      else
        printf '%s' "$target"
      fi ;;
  esac
}

link_re='^(.*[^!]|)\[([^]]*)\]\(([^)[:space:]]+)\)(.*)$'
in_code=0
while IFS= read -r line || [ -n "$line" ]; do
  # Fenced blocks: ```math becomes a displayed formula; other fences pass through untouched.
  if [[ "$line" =~ ^[[:space:]]*\`\`\` ]]; then
    if [ "$in_code" = math ]; then printf '\\f]\n'; in_code=0; continue; fi
    if [ "$in_code" = 0 ] && [[ "$line" =~ ^[[:space:]]*\`\`\`math[[:space:]]*$ ]]; then
      printf '\\f[\n'; in_code=math; continue
    fi
    if [ "$in_code" = 0 ]; then in_code=1; else in_code=0; fi
    printf '%s\n' "$line"; continue
  fi
  if [ "$in_code" != 0 ]; then printf '%s\n' "$line"; continue; fi
  # Inline math.
  math_re='^(.*)\$`([^`]+)`\$(.*)$'
  while [[ "$line" =~ $math_re ]]; do
    line="${BASH_REMATCH[1]}\\f\$${BASH_REMATCH[2]}\\f\$${BASH_REMATCH[3]}"
  done
  # Bold that starts with a bracket or a code span (**(a) ...**, **`percentile`.**): Doxygen
  # 1.9 leaves the asterisks as text there, so such a span becomes <b>...</b>.
  bold_re='^(.*)\*\*([(`][^*]*[^*[:space:]])\*\*(.*)$'
  while [[ "$line" =~ $bold_re ]]; do
    line="${BASH_REMATCH[1]}<b>${BASH_REMATCH[2]}</b>${BASH_REMATCH[3]}"
  done
  # A one-backtick code span holding a quote ('x', `'linear'`): Doxygen 1.9 reads `...' as a
  # TeX-style quotation and the span falls apart; with two backticks it does not. Only on lines
  # whose backticks pair up (a span never continues on the next line there).
  ticks="${line//[^\`]/}"
  if [ $(( ${#ticks} % 2 )) -eq 0 ] && [[ "$line" == *\'* ]] && [[ "$line" != *\`\`* ]]; then
    rest="$line" line=""
    span_re='^([^`]*)`([^`]*)`(.*)$'
    while [[ "$rest" =~ $span_re ]]; do
      code="${BASH_REMATCH[2]}"
      if [[ "$code" == *\'* ]]; then code="\`\` $code \`\`"; else code="\`$code\`"; fi
      line+="${BASH_REMATCH[1]}$code"
      rest="${BASH_REMATCH[3]}"
    done
    line+="$rest"
  fi
  # Links: drop backticks in the text, rewrite the target.
  out=""
  while [[ "$line" =~ $link_re ]]; do
    # Rightmost link first (the regex is greedy), so the rest of the line is already done.
    head="${BASH_REMATCH[1]}" text="${BASH_REMATCH[2]}" target="${BASH_REMATCH[3]}"
    tail="${BASH_REMATCH[4]}"
    new_target="$(rewrite_link "$target")"
    if [ "$new_target" = "repofile:" ]; then
      # Named, not linked, and marked so that scripts/check_docs.sh knows it is meant.
      out="<span class=\"repofile\">${text}</span>${tail}${out}"
    else
      out="[${text//\`/}](${new_target})${tail}${out}"
    fi
    line="$head"
  done
  printf '%s%s\n' "$line" "$out"
done < "$page"
