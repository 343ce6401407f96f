#include "decide/wide_choice.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace s1::decide {

std::vector<std::vector<std::size_t>> wide_choice_groups(std::span<const std::size_t> items, std::size_t group) {
  if (items.empty() || group == 0) return {};
  const std::size_t count = (items.size() + group - 1) / group;
  const std::size_t size = items.size() / count;
  const std::size_t longer = items.size() % count;
  std::vector<std::vector<std::size_t>> groups;
  std::size_t start = 0;
  for (std::size_t g = 0; g < count; ++g) {
    const std::size_t end = start + size + (g < longer ? 1 : 0);
    groups.emplace_back(items.begin() + static_cast<std::ptrdiff_t>(start), items.begin() + static_cast<std::ptrdiff_t>(end));
    start = end;
  }
  return groups;
}

std::vector<std::size_t> wide_choice_finalists(const std::vector<std::vector<std::size_t>>& groups,
                                               const std::vector<std::vector<double>>& probabilities,
                                               std::size_t keep) {
  std::vector<std::size_t> finalists;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::vector<std::size_t> order(groups[g].size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto& p = probabilities.at(g);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p.at(a) > p.at(b); });
    for (std::size_t k = 0; k < std::min(keep, order.size()); ++k) finalists.push_back(groups[g][order[k]]);
  }
  return finalists;
}

std::vector<double> wide_choice_combine(std::span<const double> first_round, std::span<const std::size_t> finalists,
                                        std::span<const double> final_round, double residual) {
  if (finalists.size() != final_round.size()) throw std::invalid_argument("one final probability per finalist");
  std::vector<bool> in_final(first_round.size(), false);
  for (const std::size_t item : finalists) in_final.at(item) = true;
  double rest_mass = 0.0;
  for (std::size_t i = 0; i < first_round.size(); ++i) {
    if (!in_final[i]) rest_mass += first_round[i];
  }
  if (rest_mass == 0.0) rest_mass = 1.0;
  std::vector<double> combined(first_round.size(), 0.0);
  // Summed in the reference's order (finalists, then the others in item order) so the normalising
  // sum rounds the same way.
  double total = 0.0;
  for (std::size_t k = 0; k < finalists.size(); ++k) {
    combined[finalists[k]] = final_round[k] * (1.0 - residual);
    total += combined[finalists[k]];
  }
  for (std::size_t i = 0; i < first_round.size(); ++i) {
    if (in_final[i]) continue;
    combined[i] = residual * first_round[i] / rest_mass;
    total += combined[i];
  }
  for (double& p : combined) p /= total;
  return combined;
}

bool wide_choice_terminates(const WideChoiceConfig& config, std::size_t max_row_options, std::size_t max_options) {
  if (config.group < 2 || config.group > max_row_options || config.keep == 0) return false;
  for (std::size_t n = max_row_options + 1; n <= max_options; ++n) {
    std::vector<std::size_t> items(n);
    std::iota(items.begin(), items.end(), std::size_t{0});
    std::size_t finalists = 0;
    for (const auto& group : wide_choice_groups(items, config.group)) finalists += std::min(config.keep, group.size());
    if (finalists >= n || finalists < 2) return false;
  }
  return true;
}

WideChoice::WideChoice(std::size_t option_count, std::size_t max_row_options, WideChoiceConfig config)
    : max_row_options_(max_row_options), config_(config) {
  std::vector<std::size_t> options(option_count);
  std::iota(options.begin(), options.end(), std::size_t{0});
  enter(std::move(options));
}

void WideChoice::enter(std::vector<std::size_t> options) {
  Level level;
  level.options = std::move(options);
  rows_.clear();
  if (level.options.size() > max_row_options_) {
    std::vector<std::size_t> positions(level.options.size());
    std::iota(positions.begin(), positions.end(), std::size_t{0});
    level.groups = wide_choice_groups(positions, config_.group);
    for (const auto& group : level.groups) {
      auto& row = rows_.emplace_back();
      for (const std::size_t position : group) row.push_back(level.options[position]);
    }
  } else {
    rows_.push_back(level.options);
  }
  levels_.push_back(std::move(level));
}

void WideChoice::advance(const std::vector<std::vector<double>>& row_probabilities) {
  if (finished() || row_probabilities.size() != rows_.size()) {
    throw std::invalid_argument("wide choice: one distribution per pending row");
  }
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    if (row_probabilities[r].size() != rows_[r].size()) {
      throw std::invalid_argument("wide choice: one probability per option of a row");
    }
  }
  Level& level = levels_.back();
  if (!level.groups.empty()) {
    level.first_round.assign(level.options.size(), 0.0);
    for (std::size_t g = 0; g < level.groups.size(); ++g) {
      for (std::size_t i = 0; i < level.groups[g].size(); ++i) level.first_round[level.groups[g][i]] = row_probabilities[g][i];
    }
    level.finalists = wide_choice_finalists(level.groups, row_probabilities, config_.keep);
    std::vector<std::size_t> next;
    for (const std::size_t position : level.finalists) next.push_back(level.options[position]);
    enter(std::move(next));
    return;
  }
  std::vector<double> result = row_probabilities.front();
  levels_.pop_back();
  while (!levels_.empty()) {
    const Level& parent = levels_.back();
    result = wide_choice_combine(parent.first_round, parent.finalists, result, config_.residual);
    levels_.pop_back();
  }
  probabilities_ = std::move(result);
  rows_.clear();
}

}  // namespace s1::decide
