#!/usr/bin/env bash
# Checks the generated documentation (the 'docs' target's HTML) for the faults a reader meets but
# Doxygen does not warn about. Usage: scripts/check_docs.sh [HTML_DIR]  (default build/docs/html)
#
#   1. unrendered emphasis: '**' left as text in a page (Doxygen 1.9 does not open bold before a
#      bracket or a code span);
#   2. backticks inside a link's text (Doxygen shows them literally there), or a backtick left
#      in the text (a code span Doxygen did not render: it reads `x' as a quotation);
#   3. dead links: an href to a local file that does not exist;
#   4. de-linked references: a Markdown link of a chapter, exercise or docs page whose text is
#      not a link in the page Doxygen wrote (a target it could not resolve becomes plain text),
#      or raw '[text](target)' left in a page. Names the Markdown filter marks on purpose as
#      repository files without a page (<span class="repofile">) are accepted.
#
# Plain bash, grep and sed (no Python in the build). Exit status 0 = clean, 1 = faults (each one
# printed as "page: what: excerpt"), 2 = bad usage.
set -uo pipefail
if [ -n "${1:-}" ]; then html="$(realpath -m "$1")"; fi
cd "$(dirname "$0")/.."
html="${html:-build/docs/html}"
if [ ! -f "$html/index.html" ]; then
  echo "check_docs: $html/index.html not found; build the docs first (cmake --build --preset release --target docs)" >&2
  exit 2
fi

faults=0
fault() {  # page, what, excerpt
  printf '%s: %s: %s\n' "$1" "$2" "$(printf '%s' "$3" | cut -c1-160)"
  faults=$((faults + 1))
}

# One page as one line of visible text: code blocks, inline code and formulas removed, tags
# dropped, the common entities decoded.
visible_text() {
  tr '\n' ' ' < "$1" |
    sed -E -e 's#<div class="fragment">.*</div><!-- fragment -->##g' \
           -e 's#<pre[^>]*>([^<]|<[^/]|</[^p])*</pre>##g' \
           -e 's#<code[^>]*>([^<]|<[^/]|</[^c])*</code>##g' \
           -e 's#<script[^>]*>([^<]|<[^/]|</[^s])*</script>##g' \
           -e 's#\\\(([^\\]|\\[^)])*\\\)##g' -e 's#\\\[([^\\]|\\[^]])*\\\]##g' \
           -e 's#<[^>]*>##g' \
           -e 's#&lt;#<#g; s#&gt;#>#g; s#&quot;#"#g; s#&amp;#\&#g' -e "s|&#39;|'|g"
}
# The text of every <a ...>...</a> of a page, one per line, tags inside dropped.
anchor_texts() {
  tr '\n' ' ' < "$1" | grep -oE '<a [^>]*>([^<]|<[^/]|</[^a])*</a>' |
    sed -E -e 's#^<a [^>]*>##; s#</a>$##; s#<[^>]*>##g' \
           -e 's#&lt;#<#g; s#&gt;#>#g; s#&quot;#"#g; s#&amp;#\&#g' -e "s|&#39;|'|g"
}
# Comparison key: letters and digits only, lower case (Doxygen turns -- into an en dash, ...).
key() { tr -cd '[:alnum:]\n' | tr '[:upper:]' '[:lower:]'; }

# The Markdown pages and the HTML page Doxygen writes for each.
pages=()
while IFS= read -r md; do pages+=("$md"); done < <(
  { echo README.md; ls docs/*.md chapters/*/README.md exercises/README.md exercises/*/README.md \
      kernels/README.md 2>/dev/null; } | sort -u)
html_of() {
  if [ "$1" = docs/mainpage.md ]; then echo "$html/index.html"; return; fi
  local label  # a page titled "# Title {#label}" is written to label.html
  label="$(head -1 "$1" | sed -nE 's/.*\{#([A-Za-z0-9_]+)\}[[:space:]]*$/\1/p')"
  if [ -n "$label" ]; then echo "$html/$label.html"; return; fi
  echo "$html/md_$(printf '%s' "${1%.md}" | sed 's#/#_#g').html"
}

for md in "${pages[@]}"; do
  page="$(html_of "$md")"
  if [ ! -f "$page" ]; then fault "$md" "no HTML page" "$page"; continue; fi
  text="$(visible_text "$page")"

  # 1. unrendered bold
  while IFS= read -r hit; do
    [ -n "$hit" ] && fault "$md" "unrendered ** in the text" "$hit"
  done < <(printf '%s' "$text" | grep -oE '.{0,40}\*\*.{0,40}')

  # 1b. a code span that did not render: a backtick left in the text
  while IFS= read -r hit; do
    [ -n "$hit" ] && fault "$md" "a backtick left in the text (code span not rendered)" "$hit"
  done < <(printf '%s' "$text" | grep -oE '.{0,40}`.{0,40}')

  # 2. backticks inside link text
  while IFS= read -r a; do
    fault "$md" "backticks inside a link's text" "$a"
  done < <(anchor_texts "$page" | grep '`')

  # 4a. raw Markdown link syntax left as text
  while IFS= read -r hit; do
    [ -n "$hit" ] && fault "$md" "a Markdown link left as text" "$hit"
  done < <(printf '%s' "$text" | grep -oE '\[[^]]{1,80}\]\([^) ]{1,120}\)')

  # 4b. every link of the source is a link in the page
  anchors="$(anchor_texts "$page" | key | sort -u)"
  repofiles="$(tr '\n' ' ' < "$page" | grep -oE '<span class="repofile">([^<]|<[^/]|</[^s])*</span>' |
               sed -E 's#<[^>]*>##g' | key | sort -u)"
  while IFS= read -r link_text; do
    k="$(printf '%s\n' "$link_text" | key)"
    [ -z "$k" ] && continue
    if ! grep -qxF "$k" <<< "$anchors" && ! grep -qxF "$k" <<< "$repofiles"; then
      fault "$md" "link became plain text" "[$link_text]"
    fi
  done < <(sed -e '/^[[:space:]]*```/,/^[[:space:]]*```/d' "$md" | tr '\n' ' ' |
             sed -E 's#`[^`]*`##g' |  # links inside inline code are code, not links
             grep -oE '(^|[^!])\[[^]]+\]\([^) ]+\)' | sed -E 's#^[^[]?\[##; s#\]\([^)]*\)$##')
done

# 3. dead links, in every page (the API pages too): each distinct local target must exist.
while IFS= read -r target; do
  case "$target" in ''|http:*|https:*|mailto:*|javascript:*|ftp:*|file:*) continue ;; esac
  if [ ! -e "$html/$target" ]; then
    from="$(grep -l "href=\"$target[\"#?]" "$html"/*.html | head -1)"
    fault "$(basename "$from")" "dead link" "$target"
  fi
done < <(cat "$html"/*.html | grep -oE 'href="[^"#?]*' | sed 's#^href="##' | sort -u)

if [ "$faults" -gt 0 ]; then
  echo "check_docs: $faults fault(s) in $html" >&2
  exit 1
fi
echo "check_docs: ${#pages[@]} Markdown pages and every link in $html: OK"
