#!/usr/bin/env bash
# The core's folders are layers: a file may include headers of its own layer and of the layers
# below it, never above (common/CMakeLists.txt lists the order). This check reads every
# #include "inferlab/<layer>/..." under common/ and fails naming each include that goes upward.
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
layers=(base model runtime analysis serving constrain app http)
rank() { local i; for i in "${!layers[@]}"; do [ "${layers[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
bad=0
while IFS= read -r file; do
  layer=$(echo "$file" | sed -E 's#.*common/(include/inferlab|src)/([a-z]+)/.*#\2#')
  own=$(rank "$layer")
  if [ "$own" -lt 0 ]; then echo "not in a layer folder: $file"; bad=1; continue; fi
  while IFS= read -r used; do
    r=$(rank "$used")
    # constrain/ sits beside serving/, not above it: neither may include the other.
    if [ "$r" -gt "$own" ] || { [ "$layer" = constrain ] && [ "$used" = serving ]; } ||
       { [ "$layer" = serving ] && [ "$used" = constrain ]; }; then
      echo "$file includes inferlab/$used/ (layer '$used' is above '$layer')"; bad=1
    fi
  done < <(grep -oE '#include "inferlab/[a-z]+/' "$file" | sed -E 's#.*inferlab/([a-z]+)/#\1#' | grep -v '^kernels$' || true)
done < <(find "$root/common/include/inferlab" "$root/common/src" -name '*.hpp' -o -name '*.cpp' | sort)
if [ "$bad" -ne 0 ]; then exit 1; fi
echo "layers: every include in common/ goes to its own layer or a lower one"
