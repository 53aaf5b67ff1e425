// Exercise 09, one checked answer: the verification step of tree speculation.
#include <algorithm>

#include "exercise.hpp"

namespace inferlab::ex09 {

TreeVerdict verify_tree(const DraftTree& tree, std::span<const float> p, Rng& rng) {
  const int n = tree.size();
  const std::size_t V = p.size() / std::size_t(n + 1);
  // children[point + 1]: the nodes whose parent is `point` (-1 = the context), in node order.
  std::vector<std::vector<int>> children(std::size_t(n) + 1);
  for (int i = 0; i < n; ++i) children[std::size_t(tree.parents[std::size_t(i)] + 1)].push_back(i);

  TreeVerdict v;
  int at = -1;
  while (true) {
    const std::span<const float> row = p.subspan(std::size_t(at + 1) * V, V);
    std::vector<float> r(row.begin(), row.end());
    int accepted = -1;
    for (int c : children[std::size_t(at + 1)]) {
      const std::size_t x = std::size_t(tree.tokens[std::size_t(c)]);
      const std::vector<float>& q = tree.q[std::size_t(c)];
      // Accept with probability min(1, r(x) / q(x)).
      if (rng.next_f32() * q[x] < r[x]) {
        accepted = c;
        break;
      }
      // Rejected: the next sibling (or the final draw) must supply what r has beyond q.
      double total = 0.0;
      for (std::size_t i = 0; i < V; ++i) {
        r[i] = std::max(0.0f, r[i] - q[i]);
        total += r[i];
      }
      if (total > 0.0) {
        for (float& ri : r) ri = static_cast<float>(ri / total);
      } else {
        r.assign(row.begin(), row.end());
      }
    }
    if (accepted < 0) {
      v.next_token = sample_from(r, rng.next_f32());
      return v;
    }
    v.path.push_back(accepted);
    at = accepted;
  }
}

}  // namespace inferlab::ex09
