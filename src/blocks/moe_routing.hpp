// A mixture of experts' routing for one token, as Transformers computes it: scores from the
// router's logits (softmax over the experts, or each one's sigmoid), the choice of the top k
// (on the scores plus a correction bias, within the best groups when the rule has groups,
// the other groups' scores read as 0.0), and the chosen experts' unbiased scores as weights,
// renormalised and scaled; or Phi-3.5-MoE's sparsemixer, which chooses and weighs the experts
// one at a time from the logits.
//
// The exponentials are computed in double by exp_of below, a fixed sequence of IEEE
// operations (the library is compiled with -ffp-contract=off), and rounded once to the
// block's scalar: more accurate than PyTorch's float softmax, and the same bits on every
// CPU, which a libm exp would not promise. Ties between equal scores go to the lower
// expert (or group) number.
#ifndef EGELU_SRC_BLOCKS_MOE_ROUTING_HPP
#define EGELU_SRC_BLOCKS_MOE_ROUTING_HPP

#include <algorithm>
#include <cmath>
#include <egelu/moe_feed_forward.hpp>
#include <limits>

namespace egelu {
namespace blocks {

// e^x for x <= 0 (and moderate x > 0), to within a few double ulps: x = k ln 2 + r with
// |r| <= ln 2 / 2, e^r by its Taylor polynomial of degree 13 (remainder below 3e-18), then
// scaled by 2^k (exactly, or rounded once into the subnormals).
inline double exp_of(double x) {
  if (!(x > -746.0)) return x != x ? x : 0.0;  // NaN stays NaN; below -745.2, e^x rounds to 0
  constexpr double inv_ln2 = 1.4426950408889634, ln2_hi = 0x1.62e42fee00000p-1, ln2_lo = 0x1.a39ef35793c76p-33;
  const double k = std::nearbyint(x * inv_ln2);
  const double r = (x - k * ln2_hi) - k * ln2_lo;  // k ln2_hi is exact for |k| < 2^11
  constexpr double c[] = {
      1.0 / 6227020800, 1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
      1.0 / 720,        1.0 / 120,       1.0 / 24,       1.0 / 6,       0.5,          1.0,         1.0};
  double p = c[0];
  for (int i = 1; i < 14; ++i) p = p * r + c[i];
  return std::ldexp(p, int(k));
}

// 1 / (1 + e^-x), from e^-|x| so that nothing overflows.
inline double sigmoid_of(double x) {
  const double e = exp_of(-std::fabs(x));
  return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

template <typename Scalar>
using routing_of = typename MoeFeedForward<Scalar>::Routing;

// Whether expert a ranks before expert b on `score`: higher first, the lower number on a tie.
template <typename Scalar>
bool ranks_before(const Scalar* score, int a, int b) {
  return score[a] > score[b] || (score[a] == score[b] && a < b);
}

// Phi-3.5-MoE's sparsemixer at inference (Transformers' `sparsemixer`, not training): k times,
// the best logit m left (expert b) is chosen, and weighed by the softmax at b over the logits
// left that are within a relative 2 jitter of it, l_j with (m - l_j) / max(|l_j|, m) <= 2 jitter
// (a 0 / 0 compares false: kept, as in PyTorch). The ratio and its comparison are in Scalar, as
// PyTorch computes them in the model's dtype (float for float checkpoints, the threshold 2 jitter
// rounded to it); the softmax in double. Writes the chosen experts, in the order chosen, to
// `experts` and their weights to `score` at their numbers.
template <typename Scalar>
void sparsemixer_choice(const Scalar* logits, int E, const routing_of<Scalar>& r, Scalar* score, int* experts) {
  const int k = r.experts_per_token;
  const Scalar twice_jitter = 2 * r.jitter;
  for (int n = 0; n < k; ++n) {
    const auto left = [&](int e) { return std::find(experts, experts + n, e) == experts + n; };
    int best = -1;
    for (int e = 0; e < E; ++e) {
      if (left(e) && (best < 0 || ranks_before(logits, e, best))) best = e;
    }
    const Scalar most = logits[best];
    double sum = 0;
    for (int e = 0; e < E; ++e) {
      const Scalar l = logits[e], ratio = (most - l) / std::max(Scalar(std::fabs(l)), most);
      if (left(e) && !(ratio > twice_jitter)) sum += exp_of(double(l) - double(most));
    }
    experts[n] = best;
    score[best] = Scalar(1 / sum);  // the sum holds e^0 = 1 for b itself
  }
}

// Softmax or sigmoid scores, and the top k on them (plus the correction bias, or null; sigmoid
// without a bias or groups: on the logits), within the best groups when the rule has groups: writes the scores to
// `score` and the k experts to `experts`. `choice` is E values of scratch.
template <typename Scalar>
void choose_top_k(const Scalar* logits, int E, const Scalar* bias, const routing_of<Scalar>& r, Scalar* score,
                  Scalar* choice, int* experts) {
  if (r.score == RouterScore::softmax) {
    // exp(l - max) / sum, the differences and the sum in double, each score rounded once.
    double most = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int e = 0; e < E; ++e) most = std::max(most, double(logits[e]));
    for (int e = 0; e < E; ++e) sum += exp_of(double(logits[e]) - most);
    for (int e = 0; e < E; ++e) score[e] = Scalar(exp_of(double(logits[e]) - most) / sum);
  } else {
    for (int e = 0; e < E; ++e) score[e] = Scalar(sigmoid_of(double(logits[e])));
  }
  // Sigmoid scores without a bias or groups are chosen on the logits, as Llama 4's router does:
  // sigmoid keeps their order but rounds large ones to the same score (1 above about 17 in float).
  // Groups rank and mask scores, never negative, as DeepSeek's do.
  const bool on_logits = !bias && r.score == RouterScore::sigmoid && r.group_rank == GroupRank::none;
  for (int e = 0; e < E; ++e) choice[e] = bias ? Scalar(score[e] + bias[e]) : on_logits ? logits[e] : score[e];

  if (r.group_rank != GroupRank::none) {
    // Rank the groups, keep the best groups_kept, read the others' scores as 0.0.
    const int per_group = E / r.groups;
    Scalar group_score[256];  // at most 256 groups: checked when the block is made
    for (int g = 0; g < r.groups; ++g) {
      const Scalar* s = choice + g * per_group;
      if (r.group_rank == GroupRank::best) {
        group_score[g] = *std::max_element(s, s + per_group);
      } else {
        // The sum of the two best, as topk(2).sum() adds them: the larger first.
        int first = 0;
        for (int e = 1; e < per_group; ++e) first = ranks_before(s, e, first) ? e : first;
        int second = first == 0 ? 1 : 0;
        for (int e = 0; e < per_group; ++e) {
          if (e != first && ranks_before(s, e, second)) second = e;
        }
        group_score[g] = Scalar(s[first] + s[second]);
      }
    }
    bool kept[256] = {};
    for (int n = 0; n < r.groups_kept; ++n) {
      int best = -1;
      for (int g = 0; g < r.groups; ++g) {
        if (!kept[g] && (best < 0 || ranks_before(group_score, g, best))) best = g;
      }
      kept[best] = true;
    }
    for (int g = 0; g < r.groups; ++g) {
      if (!kept[g]) std::fill(choice + g * per_group, choice + (g + 1) * per_group, Scalar(0));
    }
  }

  // The top k, by selection (k is small).
  const int k = r.experts_per_token;
  for (int n = 0; n < k; ++n) {
    int best = -1;
    for (int e = 0; e < E; ++e) {
      if (std::find(experts, experts + n, e) == experts + n && (best < 0 || ranks_before(choice, e, best))) best = e;
    }
    experts[n] = best;
  }
}

// Routes one token: from its E logits (and the correction bias, or null), writes its k
// chosen experts in increasing number to `experts` and their weights to `weights`.
// `score` and `choice` are E values of scratch.
template <typename Scalar>
void route_token(const Scalar* logits, int E, const Scalar* bias, const routing_of<Scalar>& r, Scalar* score,
                 Scalar* choice, int* experts, Scalar* weights) {
  const int k = r.experts_per_token;
  if (r.score == RouterScore::sparsemixer) {
    sparsemixer_choice(logits, E, r, score, experts);
  } else {
    choose_top_k(logits, E, bias, r, score, choice, experts);
  }
  std::sort(experts, experts + k);
  for (int n = 0; n < k; ++n) weights[n] = score[experts[n]];
  if (r.normalize) {
    Scalar sum = 0;
    for (int n = 0; n < k; ++n) sum += weights[n];
    if (r.score == RouterScore::sigmoid) sum += Scalar(1e-20);  // DeepSeek-V3's denominator
    for (int n = 0; n < k; ++n) weights[n] /= sum;
  }
  for (int n = 0; n < k; ++n) weights[n] *= r.scale;
}

}  // namespace blocks
}  // namespace egelu

#endif  // EGELU_SRC_BLOCKS_MOE_ROUTING_HPP
