// A draft tree and its exact verification by recursive rejection sampling.
#include "inferlab/runtime/speculative_verify.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"

namespace inferlab {

void DraftTree::clear() {
  tokens.clear();
  parents.clear();
  q.clear();
}

int DraftTree::add(int token, int parent, std::vector<float> q_row) {
  tokens.push_back(token);
  parents.push_back(parent);
  q.push_back(std::move(q_row));
  return size() - 1;
}

bool DraftTree::is_chain() const {
  for (int i = 0; i < size(); ++i) {
    if (parents[std::size_t(i)] != i - 1) return false;
  }
  return true;
}

std::vector<int> DraftTree::depths() const {
  std::vector<int> d(tokens.size(), 0);
  for (std::size_t i = 0; i < d.size(); ++i) {
    d[i] = parents[i] < 0 ? 0 : d[std::size_t(parents[i])] + 1;
  }
  return d;
}

Verdict verify_draft(const DraftTree& tree, std::span<const float> p, bool greedy, Rng& rng) {
  const int n = tree.size();
  if (p.empty() || p.size() % std::size_t(n + 1) != 0) {
    throw Error(fmt::format("verify: {} probabilities for {} rows", p.size(), n + 1));
  }
  const std::size_t V = p.size() / std::size_t(n + 1);
  std::vector<std::vector<int>> children(std::size_t(n) + 1);  // index: parent + 1
  for (int i = 0; i < n; ++i) {
    if (tree.q[std::size_t(i)].size() != V) {
      throw Error(fmt::format("verify: node {} has a q of {} entries, vocabulary {}", i,
                              tree.q[std::size_t(i)].size(), V));
    }
    children[std::size_t(tree.parents[std::size_t(i)] + 1)].push_back(i);
  }

  Verdict v;
  std::vector<float> r;
  int at = -1;  // the node whose children are being tried (-1: the context)
  while (true) {
    const std::span<const float> row = p.subspan(std::size_t(at + 1) * V, V);
    const std::vector<int>& kids = children[std::size_t(at + 1)];
    if (greedy) {
      // p is one-hot at the target's argmax: a child is accepted iff it is that token.
      const int best = argmax(row);
      const auto hit = std::find_if(kids.begin(), kids.end(),
                                    [&](int c) { return tree.tokens[std::size_t(c)] == best; });
      if (hit == kids.end()) {
        v.next_token = best;
        return v;
      }
      v.path.push_back(*hit);
      at = *hit;
      continue;
    }
    r.assign(row.begin(), row.end());
    int accepted = -1;
    for (int c : kids) {
      const std::size_t x = std::size_t(tree.tokens[std::size_t(c)]);
      const std::vector<float>& q = tree.q[std::size_t(c)];
      if (!(q[x] > 0.0f)) {
        throw Error(fmt::format("verify: node {} proposes token {} with q = 0", c, x));
      }
      // Accept with probability min(1, r(x) / q(x)).
      if (rng.next_f32() * q[x] < r[x]) {
        accepted = c;
        break;
      }
      // Rejected: what r has beyond q is what the next guess (or the final draw) must supply.
      double total = 0.0;
      for (std::size_t i = 0; i < V; ++i) {
        r[i] = std::max(0.0f, r[i] - q[i]);
        total += r[i];
      }
      if (total > 0.0) {
        for (float& ri : r) ri = static_cast<float>(ri / total);
      } else {
        r.assign(row.begin(), row.end());  // r == q up to round-off: rejection had probability 0
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

}  // namespace inferlab
